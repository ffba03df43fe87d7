package dev.csisupervisor.client;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One page of {@code ListSnapshots}.
 *
 * @param entries the snapshots, in the plugin's order
 * @param nextToken the token of the next page; empty after the last
 */
public record SnapshotPage(List<CsiSnapshot> entries, Optional<String> nextToken) {
  public SnapshotPage {
    entries = List.copyOf(Objects.requireNonNull(entries, "entries"));
    Objects.requireNonNull(nextToken, "nextToken");
  }
}
