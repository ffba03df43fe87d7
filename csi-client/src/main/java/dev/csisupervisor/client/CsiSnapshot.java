package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * A snapshot as the plugin reported it ({@code CreateSnapshot}, {@code ListSnapshots}).
 *
 * @param snapshotId the plugin's id for it; not blank
 * @param sourceVolumeId the volume it was cut from; not blank
 * @param sizeBytes its size; 0 means unknown (CSI)
 * @param creationTime when it was cut; empty if the plugin did not say (CSI requires it, some plugins omit it)
 * @param readyToUse whether a volume can be restored from it now; while false, CSI has the CO send
 *     {@code CreateSnapshot} again (same name) to learn when it is
 */
public record CsiSnapshot(String snapshotId, String sourceVolumeId, long sizeBytes, Optional<Instant> creationTime,
    boolean readyToUse) {
  public CsiSnapshot {
    Values.requireNonBlank(snapshotId, "snapshotId");
    Values.requireNonBlank(sourceVolumeId, "sourceVolumeId");
    if (sizeBytes < 0) {
      throw new IllegalArgumentException("sizeBytes must not be negative, got " + sizeBytes);
    }
    Objects.requireNonNull(creationTime, "creationTime");
  }
}
