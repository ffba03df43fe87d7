package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.DriverChecks.notFound;
import static dev.csisupervisor.mockplugin.DriverChecks.requireId;
import static dev.csisupervisor.mockplugin.DriverChecks.requireName;

import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.CreateSnapshotResponse;
import dev.csisupervisor.csi.v1.DeleteSnapshotRequest;
import dev.csisupervisor.csi.v1.DeleteSnapshotResponse;
import dev.csisupervisor.csi.v1.GetSnapshotRequest;
import dev.csisupervisor.csi.v1.GetSnapshotResponse;
import dev.csisupervisor.csi.v1.ListSnapshotsRequest;
import dev.csisupervisor.csi.v1.ListSnapshotsResponse;
import dev.csisupervisor.csi.v1.Snapshot;
import dev.csisupervisor.mockplugin.CloudFile.Snap;
import io.grpc.Status;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

/**
 * The snapshot calls of the {@link InMemoryDriver}'s Controller side: CreateSnapshot (by name; a cut takes the
 * driver's snapshot time, during which the same name is ABORTED, and the snapshot is ready to use its ready time
 * after that, as CreateSnapshot sent again by name or ListSnapshots tell), DeleteSnapshot (with dependent snapshots,
 * refused while volumes restored from it exist), ListSnapshots (filtered by source volume or id, paged) and
 * GetSnapshot. With a shared cloud the snapshots are the cloud's ({@link CloudSnapshots}), seen by every process;
 * without, the driver's own. Thread-safe.
 */
final class DriverSnapshots {
  private final InMemoryDriver driver;
  private final Clock clock;

  DriverSnapshots(InMemoryDriver driver, Clock clock) {
    this.driver = driver;
    this.clock = clock;
  }

  /**
   * A CreateSnapshot's outcome: the snapshot's id, and how long its cut still takes (0: answer now with
   * {@link #describe}; more: answer then, {@link CsiServices}).
   */
  record Cut(String id, long remainingMs) {}

  Cut createSnapshot(CreateSnapshotRequest r) {
    requireName("name", r.getName());
    requireId("source_volume_id", r.getSourceVolumeId());
    long now = clock.millis();
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      Snap x = cloud.snapshots().create(r.getName(), r.getSourceVolumeId(), now, driver.settings().snapshotCut(),
          driver.settings().snapshotReady());
      return new Cut(x.id(), Math.max(0, x.cutUntilMs() - now));
    }
    synchronized (driver.lock()) {
      for (MockSnapshot s : driver.snapshots()) {
        if (s.name().equals(r.getName())) {
          if (!s.sourceVolumeId().equals(r.getSourceVolumeId())) {
            throw Status.ALREADY_EXISTS.withDescription("snapshot '" + r.getName()
                + "' already exists for volume " + s.sourceVolumeId()).asRuntimeException();
          }
          if (now < s.cutUntil().toEpochMilli()) {
            throw Status.ABORTED.withDescription("snapshot '" + r.getName() + "' is being cut (until "
                + s.cutUntil() + ")").asRuntimeException();
          }
          return new Cut(s.id(), 0);
        }
      }
      MockVolume v = driver.volume(r.getSourceVolumeId());
      MockSnapshot s = driver.addSnapshot(r.getName(), v, clock.instant());
      driver.persistLocked();
      return new Cut(s.id(), Math.max(0, s.cutUntil().toEpochMilli() - now));
    }
  }

  /** The snapshot as CreateSnapshot answers it now (its readiness now); NOT_FOUND if it is gone. */
  CreateSnapshotResponse describe(String id) {
    return CreateSnapshotResponse.newBuilder().setSnapshot(find(id)).build();
  }

  private Snapshot find(String id) {
    long now = clock.millis();
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      return cloud.snapshots().find(id).map(x -> CloudSnapshots.toProto(x, now))
          .orElseThrow(() -> notFound("snapshot '" + id + "' does not exist"));
    }
    synchronized (driver.lock()) {
      MockSnapshot s = driver.findSnapshot(id);
      if (s == null) {
        throw notFound("snapshot '" + id + "' does not exist");
      }
      return s.toProto(clock.instant());
    }
  }

  DeleteSnapshotResponse deleteSnapshot(DeleteSnapshotRequest r) {
    requireId("snapshot_id", r.getSnapshotId());
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      cloud.snapshots().delete(r.getSnapshotId(), driver.settings().dependentSnapshots());
      return DeleteSnapshotResponse.getDefaultInstance();
    }
    synchronized (driver.lock()) {
      if (driver.settings().dependentSnapshots()) {
        List<String> restored = driver.volumes().stream().filter(v -> v.source != null && v.source.hasSnapshot()
            && v.source.getSnapshot().getSnapshotId().equals(r.getSnapshotId())).map(v -> v.id).toList();
        if (!restored.isEmpty()) {
          throw Status.FAILED_PRECONDITION.withDescription("snapshot '" + r.getSnapshotId()
              + "' has volumes restored from it " + restored + " (dependent snapshots): delete them first")
              .asRuntimeException();
        }
      }
      driver.removeSnapshot(r.getSnapshotId());
      driver.persistLocked();
      driver.deleteSnapshotData(r.getSnapshotId());
    }
    return DeleteSnapshotResponse.getDefaultInstance();
  }

  ListSnapshotsResponse listSnapshots(ListSnapshotsRequest r) {
    List<Snapshot> all = new ArrayList<>();
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      long now = clock.millis();
      cloud.snapshots().list().forEach(x -> all.add(CloudSnapshots.toProto(x, now)));
    } else {
      synchronized (driver.lock()) {
        driver.snapshots().forEach(s -> all.add(s.toProto(clock.instant())));
      }
    }
    List<Snapshot> matching = all.stream()
        .filter(s -> r.getSnapshotId().isEmpty() || s.getSnapshotId().equals(r.getSnapshotId()))
        .filter(s -> r.getSourceVolumeId().isEmpty() || s.getSourceVolumeId().equals(r.getSourceVolumeId()))
        .toList();
    DriverInventory.Page<Snapshot> page = DriverInventory.page(matching, r.getMaxEntries(), r.getStartingToken());
    ListSnapshotsResponse.Builder out = ListSnapshotsResponse.newBuilder().setNextToken(page.nextToken());
    page.entries().forEach(s -> out.addEntries(ListSnapshotsResponse.Entry.newBuilder().setSnapshot(s)));
    return out.build();
  }

  GetSnapshotResponse getSnapshot(GetSnapshotRequest r) {
    requireId("snapshot_id", r.getSnapshotId());
    return GetSnapshotResponse.newBuilder().setSnapshot(find(r.getSnapshotId())).build();
  }
}
