package dev.csisupervisor.client;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A volume with its status, as {@code ListVolumes} and {@code ControllerGetVolume} report it.
 *
 * @param volume the volume
 * @param publishedNodeIds the nodes it is controller-published to, if the plugin says
 *     ({@code LIST_VOLUMES_PUBLISHED_NODES}); sorted
 * @param condition its condition, if the plugin reports one ({@code VOLUME_CONDITION})
 */
public record VolumeEntry(CsiVolume volume, List<String> publishedNodeIds, Optional<VolumeStats.Condition> condition) {
  public VolumeEntry {
    Objects.requireNonNull(volume, "volume");
    publishedNodeIds = List.copyOf(dev.csisupervisor.common.Values.copyOf(
        new java.util.HashSet<>(Objects.requireNonNull(publishedNodeIds, "publishedNodeIds")), "publishedNodeIds"));
    Objects.requireNonNull(condition, "condition");
  }
}
