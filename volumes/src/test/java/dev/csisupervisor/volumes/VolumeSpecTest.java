package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.volumes.VolumeRecord.Layout;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import io.grpc.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What the CSI spec and real drivers need of the volume manager (issue 27): one staging path per volume, any
 * volume id, the plugin's own view of paths, the controller publication per claim, capabilities read again,
 * and records of the previous version unmounted from where they were mounted.
 */
class VolumeSpecTest {
  private static final VolumeCapability RWX = VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER);
  private static final VolumeCapability ROX = VolumeCapability.mount(AccessMode.MULTI_NODE_READER_ONLY);

  private final InMemoryStateStore store = new InMemoryStateStore();
  private final VolumeKit kit = new VolumeKit(store);

  @AfterEach
  void close() {
    kit.close();
  }

  private MockCsiPlugin start(java.util.function.Consumer<MockCsiPlugin.Builder> custom) throws Exception {
    MockCsiPlugin p = kit.startPlugin("mock", custom);
    kit.registerNode("mock");
    return p;
  }

  @Test
  void aVolumeIdWithSlashes_ofExactlyTheSpecsSizeLimit_isMountedAtAHashedPath_andUnmounted() throws Exception {
    String prefix = "projects/p/zones/europe-west1-b/disks/" + "d".repeat(88) + "-"; // ids of exactly 128 bytes
    MockCsiPlugin plugin = start(b -> b.volumeIdPrefix(prefix));
    String vol = kit.createVolume("mock", "big");
    assertEquals(128, vol.getBytes(java.nio.charset.StandardCharsets.UTF_8).length, "CSI's size limit: " + vol);
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    Path dir = kit.socket("mock").getParent();
    String hash = VolumeRecord.directoryName(vol);
    assertEquals(dir.resolve("staging/" + hash), m.stagingPath().orElseThrow());
    assertEquals(dir.resolve("per-alloc/a1/" + hash + "/mount-multi-node-multi-writer-rw"), m.targetPath());
    assertEquals(vol, manager.list().get(0).volumeId(), "the readable id stays in the record");
    kit.drive(manager.unmount("mock", vol, "a1"));
    assertEquals(Map.of(), plugin.publishedPaths());
    assertEquals(Map.of(), plugin.stagedPaths());
  }

  @Test
  void twoUsagesOfOneVolume_shareItsOneStaging_andTheUnstageWaitsForBoth() throws Exception {
    MockCsiPlugin plugin = start(b -> {});
    String vol = kit.createVolume("mock", "shared");
    VolumeManager manager = kit.manager();
    MountedVolume rw = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "writer", RWX, false)));
    MountedVolume ro = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "reader", ROX, true)));
    assertEquals(rw.stagingPath(), ro.stagingPath(), "one staging_target_path per volume (CSI)");
    assertEquals(1, kit.client("mock").calls("NodeStageVolume"), "staged once");
    assertEquals(Map.of(vol, Set.of(rw.stagingPath().orElseThrow().toString())), plugin.stagedPaths());
    kit.drive(manager.unmount("mock", vol, "writer"));
    assertEquals(0, kit.client("mock").calls("NodeUnstageVolume"), "the reader still publishes from it");
    kit.drive(manager.unmount("mock", vol, "reader"));
    assertEquals(1, kit.client("mock").calls("NodeUnstageVolume"));
    assertTrue(manager.list().isEmpty());
  }

  @Test
  void aSecondUsageThatDoesNotMatchTheStaging_isRefused_namingTheHolderAndTheField() throws Exception {
    start(b -> {});
    String vol = kit.createVolume("mock", "fs");
    VolumeManager manager = kit.manager();
    VolumeCapability ext4 = new VolumeCapability(VolumeCapability.AccessType.MOUNT, "ext4", List.of(), "",
        AccessMode.MULTI_NODE_MULTI_WRITER);
    VolumeCapability xfs = new VolumeCapability(VolumeCapability.AccessType.MOUNT, "xfs", List.of(), "",
        AccessMode.MULTI_NODE_MULTI_WRITER);
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "first", ext4, false)));
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "second", xfs, false)));
    assertEquals(VolumeException.Reason.ACCESS_CONFLICT, e.reason());
    assertTrue(e.getMessage().contains("[first]") && e.getMessage().contains("fs_type ext4 (asked: xfs)"),
        e.getMessage());
    VolumeCapability flagged = new VolumeCapability(VolumeCapability.AccessType.MOUNT, "ext4", List.of("noexec"), "",
        AccessMode.MULTI_NODE_MULTI_WRITER);
    VolumeException f = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "third", flagged, false)));
    assertTrue(f.getMessage().contains("other mount_flags") && !f.getMessage().contains("noexec"), f.getMessage());
  }

  @Test
  void aRecordOfThePreviousVersion_isUnmountedFromItsOldPaths_andANewMountUsesTheNewLayout() throws Exception {
    MockCsiPlugin plugin = start(b -> {});
    String vol = kit.createVolume("mock", "old");
    Path dir = kit.socket("mock").getParent();
    Path oldStaging = dir.resolve("staging/" + vol + "/mount-multi-node-multi-writer-rw");
    Path oldTarget = dir.resolve("per-alloc/a1/" + vol + "/mount-multi-node-multi-writer-rw");
    // What the previous version did and recorded: staged and published at its per-usage paths.
    Files.createDirectories(oldStaging);
    Files.createDirectories(oldTarget.getParent());
    kit.mounts.mount(oldStaging);
    kit.mounts.mount(oldTarget);
    try (dev.csisupervisor.client.CsiClient c = dev.csisupervisor.client.CsiClient.create(kit.socket("mock"))) {
      c.nodeStageVolumeAsync(new dev.csisupervisor.client.NodeStageRequest(vol, Map.of(), oldStaging, RWX,
          dev.csisupervisor.client.Secrets.none(), Map.of())).get(20, TimeUnit.SECONDS);
      c.nodePublishVolumeAsync(new dev.csisupervisor.client.NodePublishRequest(vol, Map.of(), Optional.of(oldStaging),
          oldTarget, RWX, false, dev.csisupervisor.client.Secrets.none(), Map.of())).get(20, TimeUnit.SECONDS);
    }
    store.put("volume/mock/" + vol, version1Record(vol, dir));

    VolumeManager manager = kit.manager();
    VolumeRecord r = manager.find("mock", vol).orElseThrow();
    assertEquals(Layout.PER_USAGE, r.layout());
    assertEquals(oldTarget, r.targetPath("a1", r.usageOf("a1").orElseThrow().usage()));
    kit.drive(manager.unmount("mock", vol, "a1"));
    assertEquals(Map.of(), plugin.publishedPaths(), "unpublished from the old target");
    assertEquals(Map.of(), plugin.stagedPaths(), "unstaged from the old staging");
    assertEquals(Set.of(), kit.mounts.all());

    MountedVolume fresh = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a2", RWX, false)));
    assertEquals(dir.resolve("staging/" + VolumeRecord.directoryName(vol)), fresh.stagingPath().orElseThrow());
    assertEquals(Layout.PER_VOLUME, manager.find("mock", vol).orElseThrow().layout());
  }

  /** A record as the previous release wrote it (format 1): one usage staged and published for a1. */
  private static byte[] version1Record(String vol, Path pluginDir) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(1);
      out.writeUTF("mock");
      out.writeUTF(vol);
      out.writeUTF(pluginDir.toString());
      out.writeUTF("NONE");
      out.writeUTF("");
      out.writeInt(0);
      out.writeInt(1);
      out.writeUTF("MOUNT");
      out.writeUTF("MULTI_NODE_MULTI_WRITER");
      out.writeBoolean(false);
      out.writeUTF("");
      out.writeUTF("");
      out.writeUTF("STAGED");
      out.writeInt(1);
      out.writeUTF("a1");
      out.writeUTF("PUBLISHED");
    }
    return bytes.toByteArray();
  }

  @Test
  void aContainerisedPlugin_isGivenPathsUnderItsOwnMountPoint() throws Exception {
    MockCsiPlugin plugin = kit.startPlugin("mock", b -> {});
    Path dir = kit.socket("mock").getParent();
    PluginInfo base = kit.info(PluginType.CSI_NODE, "mock", Set.of(), VolumeKit.ALL_NODE_CAPS, 0, true);
    kit.registry.register(new PluginInfo(base.type(), base.name(), base.version(), base.allocId(), base.socketPath(),
        Map.of("mount_point", dir.toString(), "container_mount_point", "/csi"), base.fingerprint(), base.health(),
        false));
    String vol = kit.createVolume("mock", "inside");
    // The stage is refused, so the mock makes nothing at /csi on this host; its request is what the test reads.
    plugin.failCalls("NodeStageVolume", Status.Code.INTERNAL, "look only", 1);
    VolumeManager manager = kit.manager();
    kit.failure(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    NodeStageVolumeRequest sent = (NodeStageVolumeRequest) plugin.lastRequest("NodeStageVolume").orElseThrow();
    assertEquals("/csi/staging/" + VolumeRecord.directoryName(vol), sent.getStagingTargetPath(),
        "the staging path in the plugin's own root file system");
    assertTrue(manager.list().isEmpty(), "the failed mount was rolled back");
  }

  @Test
  void controllerPublish_perClaim_readOnlyOnlyWithPublishReadonly() throws Exception {
    MockCsiPlugin plugin = start(b -> {});
    kit.registerController("mock", Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"));
    String vol = kit.createVolume("mock", "ctl");
    VolumeManager manager = kit.manager();
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "reader", ROX, true)));
    ControllerPublishVolumeRequest first = (ControllerPublishVolumeRequest) plugin.lastRequest("ControllerPublishVolume")
        .orElseThrow();
    assertFalse(first.getReadonly(), "without PUBLISH_READONLY the CO sends false (CSI)");
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "writer", RWX, false)));
    assertEquals(2, kit.client("mock").calls("ControllerPublishVolume"), "one per claim, with its own capability");
    ControllerPublishVolumeRequest second = (ControllerPublishVolumeRequest) plugin.lastRequest("ControllerPublishVolume")
        .orElseThrow();
    assertEquals(dev.csisupervisor.csi.v1.VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER,
        second.getVolumeCapability().getAccessMode().getMode());
  }

  @Test
  void controllerPublish_withPublishReadonly_sendsTheClaimsReadOnly_andAlreadyExistsIsAnIncompatiblePublication()
      throws Exception {
    MockCsiPlugin plugin = start(b -> {});
    kit.registerController("mock", Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "PUBLISH_READONLY"));
    String vol = kit.createVolume("mock", "ro");
    VolumeManager manager = kit.manager();
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "reader", ROX, true)));
    assertTrue(((ControllerPublishVolumeRequest) plugin.lastRequest("ControllerPublishVolume").orElseThrow())
        .getReadonly());
    plugin.failCalls("ControllerPublishVolume", Status.Code.ALREADY_EXISTS, "published read-only", 1);
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "writer", RWX, false)));
    assertEquals(VolumeException.Reason.ACCESS_CONFLICT, e.reason());
    assertEquals(Optional.of(StatusCode.ALREADY_EXISTS), e.code());
    assertTrue(e.getMessage().contains("incompatible"), e.getMessage());
    assertEquals(List.of("reader"), manager.find("mock", vol).orElseThrow().allocs(), "the reader keeps its mount");
  }

  @Test
  void aPluginRegisteredAgainWithoutStageUnstage_isNotAskedToUnstage() throws Exception {
    start(b -> {});
    String vol = kit.createVolume("mock", "caps");
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    Set<String> fewer = new java.util.HashSet<>(VolumeKit.ALL_NODE_CAPS);
    fewer.remove("STAGE_UNSTAGE_VOLUME");
    kit.registerNode("mock", fewer, 0); // the driver's new version no longer stages
    CompletableFuture<Void> u = manager.unmount("mock", vol, "a1");
    kit.scheduler.forwardTime(1, TimeUnit.SECONDS);
    VolumeKit.await().until(() -> manager.waitingFor()
        .getOrDefault("mock/" + vol, "").contains("no longer offers STAGE_UNSTAGE_VOLUME"));
    assertEquals(0, kit.client("mock").calls("NodeUnstageVolume"), "never asked: it would answer UNIMPLEMENTED");
    assertFalse(u.isDone());
    // Its staging is still a mount: the operator forces it, and the agent unmounts it itself.
    kit.drive(manager.unmount(UnmountRequest.of("mock", vol, "a1").forced()));
    kit.drive(u);
    assertTrue(kit.mounts.agentUnmounts.contains(m.stagingPath().orElseThrow()));
    assertTrue(manager.list().isEmpty());
  }
}
