package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static dev.csisupervisor.mockplugin.Csi.statusOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.CapacityRange;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.ListSnapshotsRequest;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code stateFile}: the driver's volumes outlive the plugin, as a real driver's state directory. */
@Timeout(30)
class MockCsiPluginStateFileTest extends PluginOnSocketTest {
  private static final VolumeCapability MOUNT_RW = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.getDefaultInstance())
      .setAccessMode(VolumeCapability.AccessMode.newBuilder()
          .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();

  private Path stateFile;
  private Path staging;
  private Path target;

  @BeforeEach
  void paths() throws IOException {
    stateFile = dir.resolve("driver.state");
    staging = Files.createDirectory(dir.resolve("staging"));
    target = dir.resolve("target");
  }

  @Override
  MockCsiPlugin.Builder builder() {
    return super.builder().allCapabilities().stateFile(stateFile);
  }

  /** Closes the running plugin's client and starts a fresh plugin (on the same socket and state file). */
  private void restart(Consumer<MockCsiPlugin.Builder> configure) throws Exception {
    csi.close();
    start(configure);
  }

  private Volume create(String name) {
    return csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName(name)
        .addVolumeCapabilities(MOUNT_RW).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(1 << 20))
        .build()).getVolume();
  }

  private void controllerPublish(String id, boolean readonly) {
    csi.controller().controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
        .setNodeId("node-1").setVolumeCapability(MOUNT_RW).setReadonly(readonly).build());
  }

  private void stage(String id) {
    csi.node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(MOUNT_RW).build());
  }

  private void publish(String id, Path at, boolean readonly) {
    csi.node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setTargetPath(at.toString()).setVolumeCapability(MOUNT_RW)
        .setReadonly(readonly).build());
  }

  private List<String> volumeIds() {
    return csi.controller().listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
        .map(e -> e.getVolume().getVolumeId()).toList();
  }

  @Test
  void afterACrash_aNewPluginOnTheSameFile_knowsItsVolumesStagesAndPublishes() throws Exception {
    start(b -> { });
    Volume v = create("data");
    String id = v.getVolumeId();
    controllerPublish(id, false);
    stage(id);
    publish(id, target, false);
    String snapshot = csi.controller().createSnapshot(CreateSnapshotRequest.newBuilder().setName("nightly")
        .setSourceVolumeId(id).build()).getSnapshot().getSnapshotId();
    plugin.crash();

    restart(b -> { });
    assertEquals(List.of(id), volumeIds());
    assertEquals(v, create("data"), "CreateVolume of the same name: the same volume");
    assertEquals(snapshot, csi.controller().listSnapshots(ListSnapshotsRequest.getDefaultInstance())
        .getEntries(0).getSnapshot().getSnapshotId());
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> controllerPublish(id, true)),
        "still published to node-1 read-write");
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> publish(id, target, true)),
        "still published at the target read-write");
    publish(id, target, false); // the same publish again: idempotent
    assertEquals(1 << 20, csi.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
        .setVolumePath(target.toString()).build()).getUsage(0).getTotal(), "stats of a known publish");
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> csi.controller().deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(id).build())), "still staged and published");
    String other = create("other").getVolumeId();
    assertFalse(Set.of(id, snapshot).contains(other), "ids are not handed out twice: " + other);

    csi.node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
        .setTargetPath(target.toString()).build());
    assertFalse(Files.exists(target), "the restarted plugin knew the target and removed it");
    plugin.stop();

    restart(b -> { });
    assertEquals(Status.Code.NOT_FOUND, codeOf(() -> csi.node().nodeGetVolumeStats(NodeGetVolumeStatsRequest
        .newBuilder().setVolumeId(id).setVolumePath(target.toString()).build())), "the unpublish was saved");
    csi.node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
    csi.controller().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
        .setNodeId("node-1").build());
    csi.controller().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    plugin.crash();

    restart(b -> { });
    assertEquals(List.of(other), volumeIds());
  }

  @Test
  void aSecondTarget_followsTheDriversRules_afterARestart() throws Exception {
    start(b -> { });
    String id = create("data").getVolumeId();
    stage(id);
    publish(id, target, false);
    plugin.crash();

    restart(b -> { });
    Path second = dir.resolve("second");
    publish(id, second, true); // another target may be read-only: the driver allows it
    assertTrue(Files.isDirectory(second));
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> publish(id, second, false)));
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> publish(id, target, true)));
  }

  @Test
  void withoutAStateFile_nothingIsWritten_andNothingIsKept() throws Exception {
    MockCsiPlugin.Builder memoryOnly = MockCsiPlugin.builder().socket(dir.resolve("csi.sock")).allCapabilities();
    plugin = memoryOnly.start();
    csi = new Csi(plugin.socket());
    stage(create("data").getVolumeId());
    plugin.crash();
    csi.close();

    plugin = memoryOnly.start();
    csi = new Csi(plugin.socket());
    assertTrue(volumeIds().isEmpty());
    try (var files = Files.list(dir)) {
      assertEquals(Set.of("csi.sock", "staging"), Set.copyOf(files.map(p -> p.getFileName().toString()).toList()));
    }
  }

  @Test
  void aFailedSave_failsTheCallInternal_andChangesNothing() throws Exception {
    start(b -> { });
    String id = create("data").getVolumeId();
    // A directory where the save writes its temporary file: the write fails, even for root.
    Path tmp = Files.createDirectory(dir.resolve("driver.state.tmp"));
    Status status = statusOf(() -> stage(id));
    assertEquals(Status.Code.INTERNAL, status.getCode());
    assertTrue(status.getDescription().startsWith("mock driver cannot save its state to " + stateFile),
        status.getDescription());
    assertEquals(Status.Code.FAILED_PRECONDITION, codeOf(() -> publish(id, target, false)), "not staged");

    Files.delete(tmp);
    stage(id);
    publish(id, target, false);
    plugin.crash();
    restart(b -> { });
    publish(id, target, false);
    assertEquals(Status.Code.ALREADY_EXISTS, codeOf(() -> publish(id, target, true)));
  }

  @Test
  void aMalformedStateFile_failsStart_namingTheFileAndLine_andBindsNothing() throws Exception {
    Files.writeString(stateFile, "csi-mock-plugin-state 1\nnext-id 1\nvolume only-two\nend\n");
    MockCsiPlugin bad = builder().build();
    IOException e = assertThrows(IOException.class, bad::start);
    assertEquals("state file " + stateFile + " line 3: 'volume' needs 4 field(s), got 1: 'volume only-two'",
        e.getMessage());
    assertFalse(bad.isRunning());
    assertFalse(Files.exists(dir.resolve("csi.sock")));
  }

  @Test
  void aFreshStateFile_startsEmpty_andIsWrittenAtTheFirstChange() throws Exception {
    start(b -> { });
    assertTrue(volumeIds().isEmpty());
    assertFalse(Files.exists(stateFile), "nothing changed yet");
    String id = create("data").getVolumeId();
    assertNotEquals("", id);
    assertTrue(Files.readString(stateFile).contains("volume " + id + " data "), Files.readString(stateFile));
  }
}
