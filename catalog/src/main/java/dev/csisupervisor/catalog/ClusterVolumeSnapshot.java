package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A snapshot as the cluster knows it: {@code <prefix>/snapshots/<plugin>/<id>}, written by the plugin id's controller
 * agent once CreateSnapshot answers (ready or not), and again when it is ready; removed when DeleteSnapshot succeeds.
 * Never secrets. Immutable.
 *
 * @param pluginId the plugin id
 * @param snapshotId the id the plugin gave it
 * @param name the name it was asked by (CSI's idempotency key)
 * @param sourceVolumeId the volume it was cut from
 * @param sizeBytes its size as the plugin said (0: unknown); a volume made from it is at least as big
 * @param creationTime when the plugin cut it, if it said
 * @param readyToUse whether a volume can be made from it (CSI's {@code ready_to_use})
 */
public record ClusterVolumeSnapshot(String pluginId, String snapshotId, String name, String sourceVolumeId,
    long sizeBytes, Optional<Instant> creationTime, boolean readyToUse) {

  public ClusterVolumeSnapshot {
    CsiIds.checkPlugin("pluginId", pluginId);
    CsiIds.checkVolume("snapshotId", snapshotId);
    CsiIds.checkVolume("name", name);
    CsiIds.checkVolume("sourceVolumeId", sourceVolumeId);
    if (sizeBytes < 0) {
      throw new IllegalArgumentException("sizeBytes must not be negative, got " + sizeBytes);
    }
    Objects.requireNonNull(creationTime, "creationTime");
  }
}
