package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeRequest;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Expansion and topology as the CSI spec has them (issue 27): the plugin's ONLINE/OFFLINE expansion mode, a
 * {@code node_expansion_required} owed to a volume not published here (recorded, kept over a restart, done after
 * its next NodePublishVolume, then cleared), and CreateVolume asked for this node's topology.
 */
class VolumeExpansionAndTopologyTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final VolumeCapability RWX = VolumeCapability.mount(AccessMode.MULTI_NODE_MULTI_WRITER);
  private static final long GIB = 1L << 30;
  private static final Map<String, String> ZONE_A = Map.of("topology.mock/zone", "a");
  private static final Map<String, String> ZONE_B = Map.of("topology.mock/zone", "b");
  private static final String OFFLINE = "VOLUME_EXPANSION:OFFLINE";
  private static final String ONLINE = "VOLUME_EXPANSION:ONLINE";
  private static final String TOPOLOGY = "SERVICE:VOLUME_ACCESSIBILITY_CONSTRAINTS";

  private final InMemoryStateStore store = new InMemoryStateStore();
  private final VolumeKit kit = new VolumeKit(store);

  @AfterEach
  void close() {
    kit.close();
  }

  /** The mock as a monolith with every capability, registered as node and controller with these plugin capabilities. */
  private MockCsiPlugin start(Set<String> pluginCaps, long maxVolumes, Map<String, String> topology) throws Exception {
    MockCsiPlugin p = kit.startPlugin("mock", b -> b.accessibleTopology(topology).pluginCapabilities(
        pluginCaps.contains(OFFLINE) ? List.of(PluginCapability.newBuilder().setService(PluginCapability.Service
            .newBuilder().setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)).build(),
            PluginCapability.newBuilder().setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                .setType(PluginCapability.VolumeExpansion.Type.OFFLINE)).build())
        : List.of(PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
            .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)).build())));
    Set<String> caps = Stream.concat(pluginCaps.stream(), Stream.of("SERVICE:CONTROLLER_SERVICE"))
        .collect(Collectors.toSet());
    kit.registry.register(kit.info(PluginType.CSI_NODE, "mock", caps, Set.of(), VolumeKit.ALL_NODE_CAPS, maxVolumes,
        topology, true));
    kit.registry.register(kit.info(PluginType.CSI_CONTROLLER, "mock", caps, VolumeKit.ALL_CONTROLLER_CAPS, Set.of(), 0,
        Map.of(), true));
    return p;
  }

  private MockCsiPlugin start(Set<String> pluginCaps) throws Exception {
    return start(pluginCaps, 0, Map.of());
  }

  private static Topology topology(Map<String, String> segments) {
    return Topology.newBuilder().putAllSegments(segments).build();
  }

  // ---- expansion ----

  @ParameterizedTest(name = "plugin capabilities {0}")
  @ValueSource(strings = {ONLINE, ""})
  void onlineOrUnsaidExpansion_growsAPublishedVolume_controllerThenNode_atOnce(String mode) throws Exception {
    start(mode.isEmpty() ? Set.of() : Set.of(mode));
    String vol = kit.createVolume("mock", "online");
    VolumeManager manager = kit.manager();
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    long size = kit.drive(manager.expand("mock", vol, CapacityRange.atLeast(2 * GIB), Secrets.none()));
    assertEquals(2 * GIB, size);
    List<String> log = kit.client("mock").log();
    assertEquals(List.of("ControllerExpandVolume " + vol, "NodeExpandVolume " + vol), log.subList(log.size() - 2,
        log.size()));
    assertEquals(Optional.empty(), manager.find("mock", vol).orElseThrow().nodeExpansion(), "nothing owed");
    NodeExpandVolumeRequest sent = (NodeExpandVolumeRequest) kit.plugins.get(0).lastRequest("NodeExpandVolume")
        .orElseThrow();
    assertEquals(m.targetPath().toString(), sent.getVolumePath());
    assertEquals(m.stagingPath().orElseThrow().toString(), sent.getStagingTargetPath());
  }

  @Test
  void offlineExpansionOnly_isRefusedWhilePublishedHere_beforeAnyCall_andDoneOnceUnmounted() throws Exception {
    start(Set.of(OFFLINE));
    String vol = kit.createVolume("mock", "offline");
    VolumeManager manager = kit.manager();
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    VolumeException e = kit.failure(manager.expand("mock", vol, CapacityRange.atLeast(2 * GIB), Secrets.none()));
    assertEquals(VolumeException.Reason.IN_USE, e.reason());
    assertTrue(e.getMessage().contains("offline only (VOLUME_EXPANSION:OFFLINE") && e.getMessage().contains("[a1]"),
        e.getMessage());
    assertEquals(0, kit.client("mock").calls("ControllerExpandVolume"), "never sent: CSI forbids it");

    kit.drive(manager.unmount("mock", vol, "a1"));
    assertEquals(2 * GIB, kit.drive(manager.expand("mock", vol, CapacityRange.atLeast(2 * GIB), Secrets.none())));
    assertEquals(1, kit.client("mock").calls("ControllerExpandVolume"));
    assertEquals(0, kit.client("mock").calls("NodeExpandVolume"), "not published: owed, not sent");
    assertEquals(Optional.of(CapacityRange.atLeast(2 * GIB)),
        manager.find("mock", vol).orElseThrow().nodeExpansion());
  }

  @Test
  void expansionAskedWhileItsControllerIsNotReady_waitsForIt() throws Exception {
    start(Set.of(ONLINE));
    String vol = kit.createVolume("mock", "grow");
    VolumeManager manager = kit.manager();
    kit.setHealthy(PluginType.CSI_CONTROLLER, "mock", false); // restarted: not ready yet
    var f = manager.expand("mock", vol, CapacityRange.atLeast(2 * GIB), Secrets.none());
    kit.scheduler.forwardTime(java.time.Duration.ofSeconds(5));
    assertFalse(f.isDone(), "waiting, not refused as UNSUPPORTED");
    kit.setHealthy(PluginType.CSI_CONTROLLER, "mock", true);
    assertEquals(2 * GIB, kit.drive(f));
    assertEquals(1, kit.client("mock").calls("ControllerExpandVolume"));
  }

  @Test
  void nodeExpansionRequired_forAVolumeNotHere_isRecorded_survivesARestart_isDoneAfterTheNextPublish_thenCleared()
      throws Exception {
    start(Set.of(ONLINE));
    String vol = kit.createVolume("mock", "later");
    VolumeManager first = kit.manager();
    assertEquals(3 * GIB, kit.drive(first.expand("mock", vol, CapacityRange.atLeast(3 * GIB), Secrets.none())));
    VolumeRecord owed = first.find("mock", vol).orElseThrow();
    assertEquals(Optional.of(CapacityRange.atLeast(3 * GIB)), owed.nodeExpansion());
    assertFalse(owed.onNode(), "not a volume on this node");
    assertFalse(owed.hasWork(), "nothing pending");
    assertTrue(kit.events.stream().anyMatch(ev -> ev.kind() == VolumeEvent.Kind.NODE_EXPANSION_OWED
        && ev.volumeId().equals(vol) && ev.message().contains("not published here")));
    first.close();

    VolumeManager second = kit.manager();
    assertEquals(Optional.of(CapacityRange.atLeast(3 * GIB)),
        second.find("mock", vol).orElseThrow().nodeExpansion(), "kept in the state store");
    MountedVolume m = kit.drive(second.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    List<String> log = kit.client("mock").log();
    int publish = log.indexOf("NodePublishVolume " + vol);
    assertTrue(publish >= 0 && log.indexOf("NodeExpandVolume " + vol) == publish + 1,
        "NodeExpandVolume right after NodePublishVolume: " + log);
    NodeExpandVolumeRequest sent = (NodeExpandVolumeRequest) kit.plugins.get(0).lastRequest("NodeExpandVolume")
        .orElseThrow();
    assertEquals(m.targetPath().toString(), sent.getVolumePath());
    assertEquals(3 * GIB, sent.getCapacityRange().getRequiredBytes());
    assertEquals(Optional.empty(), second.find("mock", vol).orElseThrow().nodeExpansion(), "cleared");
    assertTrue(kit.events.stream().anyMatch(ev -> ev.kind() == VolumeEvent.Kind.NODE_EXPANDED && ev.allocId().equals("a1")));

    kit.drive(second.unmount("mock", vol, "a1"));
    kit.drive(second.mount(VolumeClaim.of("mock", vol, "a2", RWO, false)));
    assertEquals(1, kit.client("mock").calls("NodeExpandVolume"), "done once");
  }

  @Test
  void aFailedOwedNodeExpansion_leavesTheMountStanding_andStaysOwedForTheNextMount() throws Exception {
    MockCsiPlugin plugin = start(Set.of(ONLINE));
    String vol = kit.createVolume("mock", "retry");
    VolumeManager manager = kit.manager();
    kit.drive(manager.expand("mock", vol, CapacityRange.atLeast(2 * GIB), Secrets.none()));
    plugin.failCalls("NodeExpandVolume", Status.Code.INTERNAL, "resize2fs failed", 1);
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWX, false)));
    VolumeRecord r = manager.find("mock", vol).orElseThrow();
    assertEquals(List.of("a1"), r.allocs(), "mounted");
    assertTrue(r.nodeExpansion().isPresent(), "still owed");
    assertTrue(kit.events.stream().anyMatch(ev -> ev.kind() == VolumeEvent.Kind.NODE_EXPANSION_OWED
        && ev.message().contains("resize2fs failed")));
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a2", RWX, false)));
    assertEquals(2, kit.client("mock").calls("NodeExpandVolume"));
    assertEquals(Optional.empty(), manager.find("mock", vol).orElseThrow().nodeExpansion());
  }

  @Test
  void aRecordThatOnlyOwesAnExpansion_takesNoVolumeSlot_andDoesNotHoldADelete() throws Exception {
    start(Set.of(ONLINE), 1, Map.of());
    String owed = kit.createVolume("mock", "owed");
    String other = kit.createVolume("mock", "other");
    VolumeManager manager = kit.manager();
    kit.drive(manager.expand("mock", owed, CapacityRange.atLeast(2 * GIB), Secrets.none()));
    kit.drive(manager.mount(VolumeClaim.of("mock", other, "a1", RWO, false)));
    assertEquals(List.of("a1"), manager.find("mock", other).orElseThrow().allocs(),
        "max_volumes_per_node 1: the owed record is no volume here");
    kit.drive(manager.delete("mock", owed, Secrets.none()));
    assertEquals(1, kit.client("mock").calls("DeleteVolume"));
    assertEquals(Optional.empty(), manager.find("mock", owed), "the record goes with the volume");
    assertEquals(VolumeException.Reason.IN_USE, kit.failure(manager.delete("mock", other, Secrets.none())).reason());
  }

  // ---- topology ----

  @Test
  void create_asksForThisNodesTopology_whenTheControllerHasAccessibilityConstraints_andKeepsTheVolumes()
      throws Exception {
    MockCsiPlugin plugin = start(Set.of(TOPOLOGY), 0, ZONE_A);
    VolumeManager manager = kit.manager();
    CsiVolume v = kit.drive(manager.create("mock", "zonal", Optional.empty(), List.of(RWO), Map.of(), Secrets.none()));
    CreateVolumeRequest sent = (CreateVolumeRequest) plugin.lastRequest("CreateVolume").orElseThrow();
    assertEquals(List.of(topology(ZONE_A)), sent.getAccessibilityRequirements().getRequisiteList());
    assertEquals(List.of(topology(ZONE_A)), sent.getAccessibilityRequirements().getPreferredList());
    assertEquals(List.of(ZONE_A), v.accessibleTopology());
  }

  @Test
  void create_withTheCallersTopology_sendsItInstead_andAPluginElsewhereRefusesIt() throws Exception {
    MockCsiPlugin plugin = start(Set.of(TOPOLOGY), 0, ZONE_A);
    VolumeManager manager = kit.manager();
    VolumeException e = kit.failure(manager.create("mock", "there", Optional.empty(), List.of(RWO), Map.of(),
        Secrets.none(), Optional.of(TopologyRequirement.of(ZONE_B))));
    CreateVolumeRequest sent = (CreateVolumeRequest) plugin.lastRequest("CreateVolume").orElseThrow();
    assertEquals(List.of(topology(ZONE_B)), sent.getAccessibilityRequirements().getRequisiteList());
    assertEquals(Optional.of(StatusCode.RESOURCE_EXHAUSTED), e.code(), e.getMessage());
    assertEquals(Optional.of("CreateVolume"), e.rpc());
  }

  @Test
  void create_forAPluginWithoutAccessibilityConstraints_sendsNoTopology_andRefusesTheCallers() throws Exception {
    MockCsiPlugin plugin = start(Set.of(), 0, ZONE_A);
    VolumeManager manager = kit.manager();
    kit.drive(manager.create("mock", "flat", Optional.empty(), List.of(RWO), Map.of(), Secrets.none()));
    assertFalse(((CreateVolumeRequest) plugin.lastRequest("CreateVolume").orElseThrow()).hasAccessibilityRequirements());
    VolumeException e = kit.failure(manager.create("mock", "asked", Optional.empty(), List.of(RWO), Map.of(),
        Secrets.none(), Optional.of(TopologyRequirement.of(ZONE_A))));
    assertEquals(VolumeException.Reason.UNSUPPORTED, e.reason());
    assertTrue(e.getMessage().contains("VOLUME_ACCESSIBILITY_CONSTRAINTS"), e.getMessage());
    assertEquals(1, kit.client("mock").calls("CreateVolume"), "the refused one never sent");
  }
}
