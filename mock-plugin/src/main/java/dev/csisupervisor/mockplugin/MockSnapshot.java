package dev.csisupervisor.mockplugin;

import com.google.protobuf.Timestamp;
import dev.csisupervisor.csi.v1.Snapshot;
import java.time.Instant;

/**
 * One snapshot of the {@link InMemoryDriver}: its source volume's size at a moment ({@code created}), cut by
 * {@code cutUntil} and ready to use from {@code readyAt}.
 */
record MockSnapshot(String id, String name, String sourceVolumeId, long size, Instant created, Instant cutUntil,
    Instant readyAt) {
  /** Cut and ready at once. */
  MockSnapshot(String id, String name, String sourceVolumeId, long size, Instant created) {
    this(id, name, sourceVolumeId, size, created, created, created);
  }

  Snapshot toProto(Instant now) {
    return Snapshot.newBuilder()
        .setSnapshotId(id)
        .setSourceVolumeId(sourceVolumeId)
        .setSizeBytes(size)
        .setCreationTime(Timestamp.newBuilder()
            .setSeconds(created.getEpochSecond()).setNanos(created.getNano()))
        .setReadyToUse(!now.isBefore(readyAt))
        .build();
  }
}
