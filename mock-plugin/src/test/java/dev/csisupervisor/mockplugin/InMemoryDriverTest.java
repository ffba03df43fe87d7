package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.CapacityRange;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCapability;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The mock plugin's in-memory CSI driver, over real gRPC: the spec's codes and idempotency. */
@Timeout(30)
class InMemoryDriverTest extends PluginOnSocketTest {
  private static final VolumeCapability MOUNT_RW = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.getDefaultInstance())
      .setAccessMode(VolumeCapability.AccessMode.newBuilder()
          .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();


  @BeforeEach
  void setUp() throws Exception {
    start(MockCsiPlugin.Builder::allCapabilities);
  }

  private Volume create(String name, long bytes) {
    return csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName(name)
        .addVolumeCapabilities(MOUNT_RW)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes)).build()).getVolume();
  }

  @Test
  void createVolume_isIdempotentByName_andRefusesAnIncompatibleRepeat() {
    Volume v = create("data", 1 << 20);
    assertEquals(1 << 20, v.getCapacityBytes());
    assertEquals(v, create("data", 1 << 20));
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> create("data", 2 << 20)));
    assertEquals(Status.Code.INVALID_ARGUMENT, codeOf(() -> csi.controller().createVolume(
        CreateVolumeRequest.newBuilder().setName("nocaps").build())));
    assertEquals(Status.Code.INVALID_ARGUMENT, codeOf(() -> csi.controller().createVolume(
        CreateVolumeRequest.newBuilder().addVolumeCapabilities(MOUNT_RW).build())));
  }

  @Test
  void contentSource_mustExist_andIsEchoed() {
    Volume src = create("src", 1 << 20);
    String snap = csi.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("s")
        .setSourceVolumeId(src.getVolumeId()).build()).getSnapshot().getSnapshotId();
    VolumeContentSource fromSnap = VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snap)).build();
    Volume restored = csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName("r")
        .addVolumeCapabilities(MOUNT_RW).setVolumeContentSource(fromSnap).build()).getVolume();
    assertEquals(fromSnap, restored.getContentSource());
    VolumeContentSource missing = VolumeContentSource.newBuilder()
        .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId("nope")).build();
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> csi.controller().createVolume(CreateVolumeRequest
        .newBuilder().setName("c").addVolumeCapabilities(MOUNT_RW).setVolumeContentSource(missing).build())));
  }

  @Test
  void listVolumes_pagesWithTokens_andAbortsOnAForeignToken() {
    for (int i = 0; i < 5; i++) {
      create("v" + i, 1 << 20);
    }
    ListVolumesResponse first = csi.controller().listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(2).build());
    assertEquals(2, first.getEntriesCount());
    assertFalse(first.getNextToken().isEmpty());
    ListVolumesResponse rest = csi.controller().listVolumes(
        ListVolumesRequest.newBuilder().setStartingToken(first.getNextToken()).build());
    assertEquals(3, rest.getEntriesCount());
    assertTrue(rest.getNextToken().isEmpty());
    assertEquals(Status.Code.ABORTED, codeOf(() -> csi.controller().listVolumes(
        ListVolumesRequest.newBuilder().setStartingToken("invalid-token").build())));
  }

  @Test
  void fullLifecycle_publishesToItsOwnNodeOnly_andCreatesThenRemovesTheTargetPath() throws Exception {
    Volume v = create("life", 1 << 20);
    String id = v.getVolumeId();
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> csi.controller().controllerPublishVolume(
        ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("other-node")
            .setVolumeCapability(MOUNT_RW).build())));
    csi.controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
        .setNodeId("node-1").setVolumeCapability(MOUNT_RW).build());
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> csi.controller().controllerPublishVolume(
        ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId("node-1")
            .setVolumeCapability(MOUNT_RW).setReadonly(true).build())));
    Path staging = Files.createDirectory(dir.resolve("staging"));
    Path target = dir.resolve("target");
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> csi.node().nodePublishVolume(
        NodePublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
            .setStagingTargetPath(staging.toString()).setVolumeCapability(MOUNT_RW).build())),
        "not staged yet");
    csi.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(MOUNT_RW).build());
    csi.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
        .setTargetPath(target.toString()).setStagingTargetPath(staging.toString())
        .setVolumeCapability(MOUNT_RW).build());
    assertTrue(Files.isDirectory(target), "the plugin creates the target path");
    assertEquals(1 << 20, csi.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
        .setVolumeId(id).setVolumePath(target.toString()).build()).getUsage(0).getTotal());
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> csi.node().nodeGetVolumeStats(
        NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id).setVolumePath("some/path").build())));
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> csi.controller().deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(id).build())), "still published");

    csi.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
        .setTargetPath(target.toString()).build());
    assertFalse(Files.exists(target), "unpublish removes the target path");
    csi.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
        .setTargetPath(target.toString()).build()); // idempotent
    csi.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
    csi.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
        .setVolumeId(id).setNodeId("node-1").build());
    csi.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    csi.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()); // idempotent
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> csi.controller().validateVolumeCapabilities(
        ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).addVolumeCapabilities(MOUNT_RW)
            .build())));
  }
}
