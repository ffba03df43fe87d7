package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.DriverChecks.notFound;

import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import io.grpc.Status;
import java.time.Clock;
import java.util.Map;

/**
 * The making part of {@link DriverController#createVolume}, under the driver's lock: on the shared cloud (the disk of
 * the name, whoever made it, or a new one the cloud names; never a second) or in the driver's own memory. A new
 * volume is as large as asked, without a size its source's; its source's bytes are copied into it; with pools it
 * goes to one with room. A volume of the name that does not fit the request is ALREADY_EXISTS (CSI).
 */
final class DriverCreate {
  private final InMemoryDriver driver;
  private final DriverController controller;
  private final Clock clock;

  DriverCreate(InMemoryDriver driver, DriverController controller, Clock clock) {
    this.driver = driver;
    this.controller = controller;
    this.clock = clock;
  }

  /** A CreateVolume's volume, and whether this call made it. */
  record Made(Volume volume, boolean now) {}

  /**
   * Under the lock: the cloud's disk of this name (made by any process; its sender may have died), or a new one:
   * never a second.
   */
  Made onCloud(SharedCloud cloud, CreateVolumeRequest r, VolumeContentSource source,
      boolean accessible) {
    long required = r.getCapacityRange().getRequiredBytes();
    long limit = r.getCapacityRange().getLimitBytes();
    java.util.Optional<SharedCloud.Disk> existing = cloud.diskNamed(r.getName());
    if (existing.isEmpty() && !accessible) {
      throw notAccessible();
    }
    Map.Entry<SharedCloud.Disk, Boolean> made = existing.isPresent() ? Map.entry(existing.get(), false)
        : cloud.create(new SharedCloud.NewDisk(r.getName(), required, limit, source,
            DriverChecks.madeFor(r.getVolumeCapabilitiesList()), r.getMutableParamsMap(),
            r.hasAccessibilityRequirements() ? r.getAccessibilityRequirements() : null,
            driver.settings().pools(),
            driver.volumeIdPrefix()), clock.millis());
    SharedCloud.Disk d = made.getKey();
    if (!made.getValue()) {
      boolean fits = d.capacity() >= required && (limit == 0 || d.capacity() <= limit);
      if (!fits || !java.util.Objects.equals(d.source(), source) || !accessible) {
        throw alreadyExists(r.getName(), d.capacity(), d.source(), accessible);
      }
    }
    if (driver.findVolume(d.id()) == null) {
      driver.addVolume(d.id(), r.getName(), d.capacity(), d.source());
    }
    return new Made(controller.toProto(d), made.getValue());
  }

  /** Under the lock: the driver's own volume of this name, or a new one with its source's bytes. */
  Made inMemory(CreateVolumeRequest r, VolumeContentSource source, boolean accessible, Pools pools) {
    long required = r.getCapacityRange().getRequiredBytes();
    long limit = r.getCapacityRange().getLimitBytes();
    MockVolume existing = driver.findVolumeByName(r.getName());
    if (existing != null) {
      boolean fits = existing.capacity >= required && (limit == 0 || existing.capacity <= limit);
      if (!fits || !java.util.Objects.equals(existing.source, source) || !accessible) {
        throw alreadyExists(r.getName(), existing.capacity, existing.source, accessible);
      }
      return new Made(controller.toProto(existing), false);
    }
    if (!accessible) {
      throw notAccessible();
    }
    long sourceSize = 0;
    if (source != null) {
      sourceSize = switch (source.getTypeCase()) {
        case SNAPSHOT -> {
          MockSnapshot snap = driver.findSnapshot(source.getSnapshot().getSnapshotId());
          if (snap == null) {
            throw notFound("source snapshot '" + source.getSnapshot().getSnapshotId() + "' does not exist");
          }
          if (clock.instant().isBefore(snap.readyAt())) {
            throw Status.FAILED_PRECONDITION.withDescription("source snapshot '" + snap.id()
                + "' is not ready to use (ready at " + snap.readyAt() + ")").asRuntimeException();
          }
          yield snap.size();
        }
        default -> {
          MockVolume src = driver.findVolume(source.getVolume().getVolumeId());
          if (src == null) {
            throw notFound("source volume '" + source.getVolume().getVolumeId() + "' does not exist");
          }
          yield src.capacity;
        }
      };
    }
    long capacity = required > 0 ? Math.max(required, sourceSize)
        : sourceSize > 0 ? sourceSize
        : limit > 0 ? Math.min(limit, DriverController.DEFAULT_VOLUME_BYTES) : DriverController.DEFAULT_VOLUME_BYTES;
    if (source != null && limit > 0 && capacity > limit) {
      throw Status.OUT_OF_RANGE.withDescription("the source is " + capacity
          + " bytes, more than limit_bytes " + limit).asRuntimeException();
    }
    String pool = "";
    if (!pools.isEmpty()) {
      pool = pools.choose(r.hasAccessibilityRequirements() ? r.getAccessibilityRequirements() : null, capacity,
          driver.usedByPool());
    } else if (capacity > DriverController.TOTAL_CAPACITY_BYTES - driver.usedBytes()) {
      throw Status.OUT_OF_RANGE.withDescription("not enough capacity for " + capacity + " bytes")
          .asRuntimeException();
    }
    MockVolume v = driver.addVolume(r.getName(), capacity, source);
    v.madeFor.addAll(DriverChecks.madeFor(r.getVolumeCapabilitiesList()));
    v.mutable.putAll(r.getMutableParamsMap());
    v.pool = pool;
    DiskData data = driver.diskData();
    if (data != null && source != null) {
      if (source.hasSnapshot()) {
        data.restore(source.getSnapshot().getSnapshotId(), v.id);
      } else {
        data.cloneDisk(source.getVolume().getVolumeId(), v.id);
      }
    }
    return new Made(controller.toProto(v), true);
  }

  private io.grpc.StatusRuntimeException alreadyExists(String name, long capacity, VolumeContentSource source,
      boolean accessible) {
    return Status.ALREADY_EXISTS.withDescription("volume '" + name + "' already exists with "
        + capacity + " bytes" + (source != null ? " from " + source.toString().replace('\n', ' ').strip() : "")
        + (accessible ? "" : " at topology " + controller.ownTopology())
        + ", incompatible with this request").asRuntimeException();
  }

  private io.grpc.StatusRuntimeException notAccessible() {
    // CSI's CreateVolume errors: "Unable to provision in accessible_topology".
    return Status.RESOURCE_EXHAUSTED.withDescription("this plugin provisions at topology " + controller.ownTopology()
        + " only, which accessibility_requirements.requisite does not include").asRuntimeException();
  }

}
