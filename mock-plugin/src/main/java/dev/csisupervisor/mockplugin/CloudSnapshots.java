package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.mockplugin.CloudFile.Snap;
import dev.csisupervisor.mockplugin.CloudFile.State;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * The shared cloud's snapshots ({@link SharedCloud}): by name, with ids the cloud makes, cut from a disk by any
 * process. A cut takes {@code --snapshot-ms} (until then the same name is ABORTED: an operation is pending for it)
 * and the snapshot is ready to use {@code --snapshot-ready-ms} after that; the times are in the cloud file (epoch
 * milliseconds), so every process answers the same readiness. Cutting copies the disk's bytes ({@link DiskData}).
 * With dependent snapshots ({@code --dependent-snapshots}, as ZFS) a snapshot that disks were restored from is not
 * deleted. Thread-safe (the file's lock).
 */
final class CloudSnapshots {
  private final CloudFile file;
  private final DiskData data;

  CloudSnapshots(CloudFile file, DiskData data) {
    this.file = file;
    this.data = data;
  }

  /**
   * CreateSnapshot's part: the snapshot of this name, cut from {@code sourceDisk} now if the cloud has none.
   *
   * @param cut how long the cut takes
   * @param ready how long after the cut it becomes ready to use
   * @throws io.grpc.StatusRuntimeException ALREADY_EXISTS: the name is another disk's snapshot; ABORTED: it is being
   *     cut; NOT_FOUND: no such disk
   */
  Snap create(String name, String sourceDisk, long nowMs, Duration cut, Duration ready) {
    return file.locked(s -> {
      for (Snap x : s.snapshots.values()) {
        if (x.name().equals(name)) {
          if (!x.source().equals(sourceDisk)) {
            throw Status.ALREADY_EXISTS.withDescription("snapshot '" + name + "' already exists for volume "
                + x.source()).asRuntimeException();
          }
          if (nowMs < x.cutUntilMs()) {
            throw Status.ABORTED.withDescription("snapshot '" + name + "' is being cut (until "
                + java.time.Instant.ofEpochMilli(x.cutUntilMs()) + ")").asRuntimeException();
          }
          return x;
        }
      }
      if (!s.disks.containsKey(sourceDisk)) {
        throw DriverChecks.notFound("volume '" + sourceDisk + "' does not exist");
      }
      String id = s.newId("snap-");
      long cutUntil = nowMs + cut.toMillis();
      Snap made = new Snap(id, sourceDisk, s.disks.get(sourceDisk), nowMs, cutUntil, cutUntil + ready.toMillis(),
          name);
      s.snapshots.put(id, made);
      data.snapshot(sourceDisk, id);
      return made;
    });
  }

  Optional<Snap> find(String id) {
    return file.locked(s -> Optional.ofNullable(s.snapshots.get(id)));
  }

  /** Every snapshot, in the order they were cut. */
  List<Snap> list() {
    return file.locked(s -> List.copyOf(s.snapshots.values()));
  }

  /**
   * DeleteSnapshot's part; nothing for a snapshot the cloud does not have.
   *
   * @param dependent whether a snapshot that disks were restored from is kept ({@code --dependent-snapshots})
   * @throws io.grpc.StatusRuntimeException FAILED_PRECONDITION naming the disks restored from it
   */
  void delete(String id, boolean dependent) {
    file.locked(s -> {
      List<String> restored = SharedCloud.madeFrom(s, "snapshot", id);
      if (dependent && !restored.isEmpty()) {
        throw Status.FAILED_PRECONDITION.withDescription("snapshot '" + id + "' has volumes restored from it "
            + restored + " (dependent snapshots): delete them first").asRuntimeException();
      }
      s.snapshots.remove(id);
      return null;
    });
    data.deleteSnapshot(id);
  }

  /**
   * The size of a CreateVolume's source.
   *
   * @throws io.grpc.StatusRuntimeException NOT_FOUND: no such snapshot or disk; FAILED_PRECONDITION: the snapshot is
   *     not ready to use yet
   */
  static long sourceSize(State s, VolumeContentSource source, long nowMs) {
    String[] f = fields(source);
    if (f[0].equals("snapshot")) {
      Snap snap = s.snapshots.get(f[1]);
      if (snap == null) {
        throw DriverChecks.notFound("source snapshot '" + f[1] + "' does not exist");
      }
      if (nowMs < snap.readyAtMs()) {
        throw Status.FAILED_PRECONDITION.withDescription("source snapshot '" + f[1] + "' is not ready to use (ready "
            + "at " + java.time.Instant.ofEpochMilli(snap.readyAtMs()) + ")").asRuntimeException();
      }
      return snap.size();
    }
    Long size = s.disks.get(f[1]);
    if (size == null) {
      throw DriverChecks.notFound("source volume '" + f[1] + "' does not exist");
    }
    return size;
  }

  /** {@code {"snapshot"|"volume", id}}; INVALID_ARGUMENT for a source with neither. */
  static String[] fields(VolumeContentSource source) {
    return switch (source.getTypeCase()) {
      case SNAPSHOT -> new String[] {"snapshot", source.getSnapshot().getSnapshotId()};
      case VOLUME -> new String[] {"volume", source.getVolume().getVolumeId()};
      default -> throw DriverChecks.invalid("volume_content_source has no snapshot or volume");
    };
  }

  static VolumeContentSource source(String kind, String id) {
    VolumeContentSource.Builder b = VolumeContentSource.newBuilder();
    if (kind.equals("snapshot")) {
      b.setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(id));
    } else {
      b.setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id));
    }
    return b.build();
  }

  static dev.csisupervisor.csi.v1.Snapshot toProto(Snap x, long nowMs) {
    return dev.csisupervisor.csi.v1.Snapshot.newBuilder()
        .setSnapshotId(x.id())
        .setSourceVolumeId(x.source())
        .setSizeBytes(x.size())
        .setCreationTime(com.google.protobuf.Timestamp.newBuilder().setSeconds(Math.floorDiv(x.createdMs(), 1000))
            .setNanos((int) Math.floorMod(x.createdMs(), 1000) * 1_000_000))
        .setReadyToUse(nowMs >= x.readyAtMs())
        .build();
  }
}
