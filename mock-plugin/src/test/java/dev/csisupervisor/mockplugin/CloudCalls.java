package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.CapacityRange;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteSnapshotRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.Snapshot;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCapability;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;

/**
 * The calls the cloud tests make, each over a {@link Csi} (a real gRPC channel on the plugin's unix socket), and a
 * wall clock the test moves by hand.
 */
final class CloudCalls {
  static final long MIB = 1 << 20;
  static final VolumeCapability RWO = mount(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER);
  static final VolumeCapability ROX = mount(VolumeCapability.AccessMode.Mode.MULTI_NODE_READER_ONLY);
  static final VolumeCapability BLOCK_RWO = VolumeCapability.newBuilder()
      .setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
      .setAccessMode(VolumeCapability.AccessMode.newBuilder()
          .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)).build();

  private CloudCalls() {}

  static VolumeCapability mount(VolumeCapability.AccessMode.Mode mode) {
    return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(mode)).build();
  }

  static CreateVolumeRequest.Builder createRequest(String name, long bytes) {
    CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(RWO);
    if (bytes > 0) {
      b.setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes));
    }
    return b;
  }

  static Volume create(Csi c, String name, long bytes) {
    return c.controller().createVolume(createRequest(name, bytes).build()).getVolume();
  }

  static Volume restore(Csi c, String name, String snapshotId) {
    return c.controller().createVolume(createRequest(name, 0).setVolumeContentSource(fromSnapshot(snapshotId))
        .build()).getVolume();
  }

  static Volume cloneOf(Csi c, String name, String volumeId) {
    return c.controller().createVolume(createRequest(name, 0).setVolumeContentSource(fromVolume(volumeId))
        .build()).getVolume();
  }

  static VolumeContentSource fromSnapshot(String id) {
    return VolumeContentSource.newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder()
        .setSnapshotId(id)).build();
  }

  static VolumeContentSource fromVolume(String id) {
    return VolumeContentSource.newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder()
        .setVolumeId(id)).build();
  }

  static Snapshot snapshot(Csi c, String name, String volumeId) {
    return c.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName(name)
        .setSourceVolumeId(volumeId).build()).getSnapshot();
  }

  static void deleteSnapshot(Csi c, String id) {
    c.controller().deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build());
  }

  static void deleteVolume(Csi c, String id) {
    c.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  static void attach(Csi c, String volumeId, String node) {
    c.controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId)
        .setNodeId(node).setVolumeCapability(RWO).build());
  }

  /** A wall clock that moves only when the test says. */
  static final class HandClock extends Clock {
    private volatile Instant now = Instant.parse("2026-11-27T12:00:00Z");

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public ZoneOffset getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }
  }
}
