package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.DriverChecks.invalid;
import static dev.csisupervisor.mockplugin.DriverChecks.notFound;
import static dev.csisupervisor.mockplugin.DriverChecks.requireCapabilities;
import static dev.csisupervisor.mockplugin.DriverChecks.requireId;

import dev.csisupervisor.csi.v1.ControllerGetVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.csisupervisor.csi.v1.VolumeCondition;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the Controller side of the {@link InMemoryDriver} reports about volumes: ListVolumes (paged),
 * ControllerGetVolume and ValidateVolumeCapabilities. With a shared cloud they see the whole cloud, whoever made the disks: its
 * attachments are the published node ids, a disk marked abnormal there has that condition, a disk removed there is
 * gone (NOT_FOUND); validation confirms only what a disk was made for (the access type and mode its create asked).
 * Without a cloud, the driver's own volumes. Thread-safe.
 */
final class DriverInventory {
  private final InMemoryDriver driver;
  private final DriverController controller;

  DriverInventory(InMemoryDriver driver, DriverController controller) {
    this.driver = driver;
    this.controller = controller;
  }

  ValidateVolumeCapabilitiesResponse validate(ValidateVolumeCapabilitiesRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireCapabilities(r.getVolumeCapabilitiesList());
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      SharedCloud.Disk d = cloud.find(r.getVolumeId())
          .orElseThrow(() -> notFound("volume '" + r.getVolumeId() + "' does not exist"));
      return DriverChecks.validate(d.id(), d.capabilities(), r);
    }
    synchronized (driver.lock()) {
      MockVolume v = driver.volume(r.getVolumeId());
      return DriverChecks.validate(v.id, v.madeFor, r);
    }
  }

  ListVolumesResponse listVolumes(ListVolumesRequest r) {
    SharedCloud cloud = driver.cloud();
    ListVolumesResponse.Builder out = ListVolumesResponse.newBuilder();
    if (cloud != null) {
      Map<String, Set<String>> attached = cloud.attachments();
      Page<SharedCloud.Disk> page = page(cloud.disks(), r.getMaxEntries(), r.getStartingToken());
      for (SharedCloud.Disk d : page.entries()) {
        out.addEntries(ListVolumesResponse.Entry.newBuilder().setVolume(controller.toProto(d))
            .setStatus(ListVolumesResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(attached.getOrDefault(d.id(), Set.of()))
                .setVolumeCondition(condition(d.abnormal()))));
      }
      return out.setNextToken(page.nextToken()).build();
    }
    synchronized (driver.lock()) {
      Page<MockVolume> page = page(new ArrayList<>(driver.volumes()), r.getMaxEntries(), r.getStartingToken());
      for (MockVolume v : page.entries()) {
        out.addEntries(ListVolumesResponse.Entry.newBuilder()
            .setVolume(controller.toProto(v))
            .setStatus(ListVolumesResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(v.publishedTo.keySet())
                .setVolumeCondition(InMemoryDriver.healthy())));
      }
      return out.setNextToken(page.nextToken()).build();
    }
  }

  ControllerGetVolumeResponse controllerGetVolume(ControllerGetVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      SharedCloud.Disk d = cloud.find(r.getVolumeId())
          .orElseThrow(() -> notFound("volume '" + r.getVolumeId() + "' does not exist"));
      return ControllerGetVolumeResponse.newBuilder()
          .setVolume(controller.toProto(d))
          .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder()
              .addAllPublishedNodeIds(cloud.attachedTo(d.id()))
              .setVolumeCondition(condition(d.abnormal())))
          .build();
    }
    synchronized (driver.lock()) {
      MockVolume v = driver.volume(r.getVolumeId());
      return ControllerGetVolumeResponse.newBuilder()
          .setVolume(controller.toProto(v))
          .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder()
              .addAllPublishedNodeIds(v.publishedTo.keySet())
              .setVolumeCondition(InMemoryDriver.healthy()))
          .build();
    }
  }

  private static VolumeCondition condition(String abnormal) {
    return abnormal == null ? InMemoryDriver.healthy()
        : VolumeCondition.newBuilder().setAbnormal(true).setMessage(abnormal).build();
  }

  /** One page of a list call: its entries, and the token of the next page ({@code ""} after the last). */
  record Page<T>(List<T> entries, String nextToken) {}

  /** The page of {@code all} that starts at {@code token}; an unreadable or out-of-range token is ABORTED (CSI). */
  static <T> Page<T> page(List<T> all, int maxEntries, String token) {
    int size = all.size();
    if (maxEntries < 0) {
      throw invalid("max_entries must not be negative, got " + maxEntries);
    }
    int from = 0;
    if (!token.isEmpty()) {
      try {
        from = Integer.parseInt(token);
      } catch (NumberFormatException e) {
        throw Status.ABORTED.withDescription("starting_token '" + token + "' is not a token this plugin issued")
            .asRuntimeException();
      }
      if (from < 0 || from > size) {
        throw Status.ABORTED.withDescription("starting_token '" + token + "' is out of range (" + size
            + " entries)").asRuntimeException();
      }
    }
    int to = maxEntries == 0 ? size : (int) Math.min(size, (long) from + maxEntries);
    return new Page<>(all.subList(from, to), to < size ? Integer.toString(to) : "");
  }
}
