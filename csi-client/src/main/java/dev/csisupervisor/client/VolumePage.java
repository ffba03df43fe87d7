package dev.csisupervisor.client;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One page of {@code ListVolumes}.
 *
 * @param entries the volumes, in the plugin's order
 * @param nextToken the token of the next page; empty after the last
 */
public record VolumePage(List<VolumeEntry> entries, Optional<String> nextToken) {
  public VolumePage {
    entries = List.copyOf(Objects.requireNonNull(entries, "entries"));
    Objects.requireNonNull(nextToken, "nextToken");
  }
}
