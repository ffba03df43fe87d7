package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.VolumeException.Reason;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The rules kept on the node before any CSI call: bad input, access modes, limits, capabilities, plugin presence. */
class VolumeRulesTest extends MockNodeVolumeTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  private VolumeManager manager;

  @BeforeEach
  void startManager() {
    manager = kit.manager();
  }

  @ParameterizedTest
  @ValueSource(strings = {"a/b", "..", ".", "", " ", "a\0b", "a\nb", "a\u001fb"})
  void badAllocId_isRefusedBeforeAnyCall_namingTheField(String bad) {
    IllegalArgumentException a = assertThrows(IllegalArgumentException.class,
        () -> VolumeClaim.of("mock", "v", bad, RWO, false));
    assertTrue(a.getMessage().startsWith("allocId"), a.getMessage());
    assertThrows(IllegalArgumentException.class, () -> manager.unmount("mock", "v", bad));
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "a\0b", "\ud800"})
  void volumeIdTheSpecDoesNotAllow_isRefusedBeforeAnyCall_namingTheField(String bad) {
    IllegalArgumentException v = assertThrows(IllegalArgumentException.class,
        () -> VolumeClaim.of("mock", bad, "a1", RWO, false));
    assertTrue(v.getMessage().startsWith("volumeId"), v.getMessage());
    assertThrows(IllegalArgumentException.class, () -> manager.unmount("mock", bad, "a1"));
  }

  @ParameterizedTest
  @ValueSource(strings = {"a/b", "..", ".", " ", "a\nb", "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/d"})
  void anyVolumeIdTheSpecAllows_isAClaim(String id) {
    assertEquals(id, VolumeClaim.of("mock", id, "a1", RWO, false).volumeId());
  }

  @Test
  void aRelativeSecretsFile_isRefused_namingTheField() {
    Path relative = Path.of("secrets");
    IllegalArgumentException claim = assertThrows(IllegalArgumentException.class, () -> VolumeClaim.of("mock", "v",
        "a1", RWO, false).withSecretsFile(dev.csisupervisor.client.Secrets.none(), relative));
    assertTrue(claim.getMessage().startsWith("secretsFile must be an absolute path"), claim.getMessage());
    IllegalArgumentException unmount = assertThrows(IllegalArgumentException.class, () -> UnmountRequest.of("mock",
        "v", "a1").withSecretsFile(dev.csisupervisor.client.Secrets.none(), relative));
    assertTrue(unmount.getMessage().startsWith("secretsFile must be an absolute path"), unmount.getMessage());
    assertThrows(IllegalArgumentException.class, () -> UnmountRequest.of("mock", "v", "a/b"), "allocId");
  }

  @Test
  void aNonPositiveOperationDeadline_isRefused_namingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> VolumeManager.builder().operationDeadline(java.time.Duration.ZERO));
    assertTrue(e.getMessage().startsWith("operationDeadline"), e.getMessage());
  }

  @Test
  void overLongIds_andBadPluginIds_areRefused() {
    String longId = "x".repeat(129);
    assertTrue(assertThrows(IllegalArgumentException.class, () -> VolumeClaim.of("mock", longId, "a", RWO, false))
        .getMessage().contains("at most 128 bytes"));
    String multiByte = "é".repeat(65); // 130 bytes in UTF-8
    assertThrows(IllegalArgumentException.class, () -> VolumeClaim.of("mock", multiByte, "a", RWO, false));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> VolumeClaim.of("../x", "v", "a", RWO, false))
        .getMessage().startsWith("pluginId"));
  }

  @Test
  void readerOnlyMode_needsReadOnly() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> VolumeClaim.of("mock", "v", "a",
        VolumeCapability.mount(AccessMode.SINGLE_NODE_READER_ONLY), false));
    assertTrue(e.getMessage().startsWith("readOnly"), e.getMessage());
  }

  @Test
  void secondWriterOfASingleWriterVolume_isRefused_namingTheHolder() {
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "holder", RWO, false)));
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "second", RWO, false)));
    assertEquals(Reason.ACCESS_CONFLICT, e.reason());
    assertTrue(e.getMessage().contains("alloc holder"), e.getMessage());
    assertEquals(1, kit.client("mock").calls("NodePublishVolume"), "nothing called for the refused claim");
  }

  @Test
  void readersBesideOneWriter_ofMultiNodeSingleWriter_areAllowed_butNotASecondWriter() {
    VolumeCapability mnsw = VolumeCapability.mount(AccessMode.MULTI_NODE_SINGLE_WRITER);
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "w", mnsw, false)));
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "r1", mnsw, true)));
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "r2", mnsw, true)));
    assertEquals(Reason.ACCESS_CONFLICT, kit.failure(manager.mount(VolumeClaim.of("mock", vol, "w2", mnsw, false))).reason());
  }

  @Test
  void singleNodeSingleWriter_admitsOneAllocationOnly_evenAReader() {
    VolumeCapability snsw = VolumeCapability.mount(AccessMode.SINGLE_NODE_SINGLE_WRITER);
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "only", snsw, false)));
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "reader",
        VolumeCapability.mount(AccessMode.MULTI_NODE_READER_ONLY), true)));
    assertEquals(Reason.ACCESS_CONFLICT, e.reason());
    assertTrue(e.getMessage().contains("alloc only"));
  }

  @Test
  void multiWriterModes_withoutTheCapability_areUnsupported() throws Exception {
    kit.registerNode("mock", Set.of("STAGE_UNSTAGE_VOLUME"), 0);
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "a",
        VolumeCapability.mount(AccessMode.SINGLE_NODE_MULTI_WRITER), false)));
    assertEquals(Reason.UNSUPPORTED, e.reason());
    assertTrue(e.getMessage().contains("SINGLE_NODE_MULTI_WRITER"), e.getMessage());
    VolumeException g = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "a",
        RWO.withVolumeMountGroup("1000"), false)));
    assertEquals(Reason.UNSUPPORTED, g.reason());
    assertTrue(g.getMessage().contains("VOLUME_MOUNT_GROUP"));
  }

  @Test
  void maxVolumesPerNode_isHonoured() throws Exception {
    kit.registerNode("mock", VolumeKit.ALL_NODE_CAPS, 2);
    String v2 = kit.createVolume("mock", "v2");
    String v3 = kit.createVolume("mock", "v3");
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a", RWO, false)));
    kit.drive(manager.mount(VolumeClaim.of("mock", v2, "a", RWO, false)));
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", v3, "a", RWO, false)));
    assertEquals(Reason.LIMIT_REACHED, e.reason());
    assertTrue(e.getMessage().contains("max_volumes_per_node"), e.getMessage());
    // Another alloc on a volume already here takes no new slot.
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "b", VolumeCapability.mount(AccessMode.MULTI_NODE_READER_ONLY), true)));
    kit.drive(manager.unmount("mock", v2, "a"));
    kit.drive(manager.mount(VolumeClaim.of("mock", v3, "a", RWO, false)));
  }

  @Test
  void mountAndDeleteWaitForAnAbsentPlugin_upToTheDeadline_thenFailNamingIt() {
    VolumeException mount = kit.failure(manager.mount(VolumeClaim.of("ghost", "v", "a", RWO, false)));
    VolumeException delete = kit.failure(manager.delete("ghost", "v", Secrets.none()));
    assertEquals(List.of(Reason.PLUGIN_UNAVAILABLE, Reason.PLUGIN_UNAVAILABLE),
        List.of(mount.reason(), delete.reason()));
    assertTrue(mount.getMessage().contains("node plugin ghost is not registered"), mount.getMessage());
    assertTrue(delete.getMessage().contains("controller plugin ghost is not registered"), delete.getMessage());
    // The wait in the project's words (the config's), not java.time's PT30S.
    assertTrue(mount.getMessage().endsWith("after waiting 30s"), mount.getMessage());
    assertTrue(delete.getMessage().endsWith("after waiting 30s"), delete.getMessage());
  }

  @Test
  void mountOfAPluginRegisteredLater_goesOnWhenItIsReady() throws Exception {
    kit.startPlugin("late");
    String v = kit.createVolume("late", "lv");
    var f = manager.mount(VolumeClaim.of("late", v, "a", RWO, false));
    kit.scheduler.forwardTime(java.time.Duration.ofSeconds(5));
    assertTrue(!f.isDone(), "waiting");
    kit.registerNode("late");
    assertEquals(v, kit.drive(f).volumeId());
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void createOnAControllerRegisteredLater_goesOnWhenItIsReady(boolean nodeHalfFirst) throws Exception {
    // An agent just started (or a plugin just restarted): the volume create is asked before the controller is
    // registered (with nothing registered, or only the node half of a plugin that advertises CONTROLLER_SERVICE),
    // and is answered once it is, not refused.
    kit.startPlugin("late");
    if (nodeHalfFirst) {
      kit.registry.register(kit.info(PluginType.CSI_NODE, "late", Set.of(CsiCapabilities.CONTROLLER_SERVICE),
          Set.of(), VolumeKit.ALL_NODE_CAPS, 0, Map.of(), true));
    }
    var f = manager.create("late", "lv", Optional.empty(), List.of(RWO), Map.of(), Secrets.none());
    kit.scheduler.forwardTime(java.time.Duration.ofSeconds(5));
    assertTrue(!f.isDone(), "waiting");
    kit.registerController("late", VolumeKit.ALL_CONTROLLER_CAPS);
    assertTrue(!kit.drive(f).volumeId().isEmpty());
  }

  @Test
  void mountBetweenAMonolithsTwoRegistrations_waitsForItsNodeHalf() throws Exception {
    // A monolith registers its controller half, then its node half; a mount in between is early, not wrong.
    kit.startPlugin("mono2");
    String v = kit.createVolume("mono2", "mv");
    PluginInfo controller = kit.info(PluginType.CSI_CONTROLLER, "mono2", VolumeKit.ALL_CONTROLLER_CAPS, Set.of(), 0,
        true);
    kit.registry.register(controller.withFingerprint(new Fingerprint("mono2", "1.0", Map.of(),
        controller.fingerprint().pluginCapabilities(), VolumeKit.ALL_CONTROLLER_CAPS, VolumeKit.ALL_NODE_CAPS,
        "node-1", 0, Map.of())));
    var f = manager.mount(VolumeClaim.of("mono2", v, "a", RWO, false));
    assertTrue(!f.isDone(), "waiting for the node half");
    kit.registerNode("mono2");
    assertEquals(v, kit.drive(f).volumeId());
  }

  @Test
  void createOnANodeOnlyPlugin_isRefusedAtOnce() throws Exception {
    kit.startPlugin("nd");
    kit.registerNode("nd");
    var f = manager.create("nd", "v", Optional.empty(), List.of(RWO), Map.of(), Secrets.none());
    assertTrue(f.isDone(), "no wait for a controller that a node-only plugin does not have");
    VolumeException e = kit.failure(f);
    assertEquals(Reason.UNSUPPORTED, e.reason());
    assertTrue(e.getMessage().contains("node plugin only"), e.getMessage());
  }

  @Test
  void mountOfAnUnhealthyPlugin_waits_andFailsSayingItIsUnhealthy() {
    kit.setHealthy(PluginType.CSI_NODE, "mock", false);
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mock", vol, "a", RWO, false)));
    assertEquals(Reason.PLUGIN_UNAVAILABLE, e.reason());
    assertTrue(e.getMessage().contains("unhealthy"), e.getMessage());
  }

  @Test
  void controllerOnlyPlugin_isRefusedAtOnce() throws Exception {
    kit.startPlugin("ctl");
    kit.registerController("ctl", VolumeKit.ALL_CONTROLLER_CAPS);
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("ctl", "v", "a", RWO, false)));
    assertEquals(Reason.UNSUPPORTED, e.reason());
    assertTrue(e.getMessage().contains("controller plugin only"));
  }

  @Test
  void statsWithoutTheCapability_areUnsupported_andOfAnUnmountedVolume_notMounted() {
    assertEquals(Reason.NOT_MOUNTED, kit.failure(manager.stats("mock", vol, java.util.Optional.empty())).reason());
    kit.registerNode("mock", Set.of("STAGE_UNSTAGE_VOLUME"), 0);
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a", RWO, false)));
    assertEquals(Reason.UNSUPPORTED, kit.failure(manager.stats("mock", vol, java.util.Optional.empty())).reason());
  }

  @Test
  void deleteOfAMountedVolume_isRefused() throws Exception {
    kit.registerController("mock", VolumeKit.ALL_CONTROLLER_CAPS);
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a", RWO, false)));
    VolumeException e = kit.failure(manager.delete("mock", vol, dev.csisupervisor.client.Secrets.none()));
    assertEquals(Reason.IN_USE, e.reason());
    assertTrue(e.getMessage().contains("[a]"), e.getMessage());
  }

  @Test
  void claimsOfTwoAllocations_inOneTaskHook_areRefused() {
    VolumeTaskHook hook = new VolumeTaskHook(manager);
    assertThrows(IllegalArgumentException.class, () -> hook.prestart(Map.of(
        "x", VolumeClaim.of("mock", vol, "a1", RWO, false), "y", VolumeClaim.of("mock", vol, "a2", RWO, false))));
  }

  @Test
  void taskHook_mountsAll_orNone() throws Exception {
    VolumeTaskHook hook = new VolumeTaskHook(manager);
    String v2 = kit.createVolume("mock", "v2");
    Map<String, java.nio.file.Path> paths = kit.drive(hook.prestart(Map.of(
        "data", VolumeClaim.of("mock", vol, "t1", RWO, false), "logs", VolumeClaim.of("mock", v2, "t1", RWO, false))));
    assertEquals(Set.of("data", "logs"), paths.keySet());
    kit.drive(hook.stop(List.of(VolumeClaim.of("mock", vol, "t1", RWO, false), VolumeClaim.of("mock", v2, "t1", RWO, false))));
    assertTrue(manager.list().isEmpty());

    kit.client("mock").fail("NodePublishVolume", dev.csisupervisor.client.StatusCode.INTERNAL, 1);
    kit.failure(hook.prestart(Map.of(
        "data", VolumeClaim.of("mock", vol, "t2", RWO, false), "logs", VolumeClaim.of("mock", v2, "t2", RWO, false))));
    VolumeKit.await().until(() -> manager.list().isEmpty());
  }
}
