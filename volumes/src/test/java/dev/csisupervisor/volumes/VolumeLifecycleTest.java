package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** An agent alone as the whole orchestrator: create, controller publish, stage, publish, and back; stats, conditions, expansion. */
class VolumeLifecycleTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);

  private VolumeKit kit;
  private VolumeManager manager;

  @BeforeEach
  void setUp() throws Exception {
    kit = VolumeKit.withMonolith("mono");
    manager = kit.manager(kit.builder().healthInterval(Duration.ofSeconds(10)));
  }

  @AfterEach
  void tearDown() {
    kit.close();
  }

  /**
   * The calls made, without the health rounds' NodeGetVolumeStats: a round falls due whenever a drive moves the fake
   * clock past its 10 s, which may be between a mount's last commit and its answer.
   */
  private static List<String> volumeCalls(FaultyClient c) {
    return c.log().stream().filter(call -> !call.startsWith("NodeGetVolumeStats")).toList();
  }

  @Test
  void createPublishStageMount_thenTheReverse_andDelete() {
    CsiVolume v = kit.drive(manager.create("mono", "data", Optional.of(CapacityRange.atLeast(1 << 20)), List.of(RWO),
        Map.of(), Secrets.none()));
    kit.drive(manager.mount(VolumeClaim.of("mono", v.volumeId(), "a1", RWO, false)));
    FaultyClient c = kit.client("mono");
    assertEquals(List.of("CreateVolume data", "ControllerPublishVolume " + v.volumeId(),
        "NodeStageVolume " + v.volumeId(), "NodePublishVolume " + v.volumeId()), volumeCalls(c));
    VolumeRecord r = manager.find("mono", v.volumeId()).orElseThrow();
    assertEquals(ControllerState.PUBLISHED, r.controller());
    assertEquals("node-1", r.controllerNodeId());

    kit.drive(manager.unmount("mono", v.volumeId(), "a1"));
    kit.drive(manager.delete("mono", v.volumeId(), Secrets.none()));
    assertEquals(List.of("NodeUnpublishVolume " + v.volumeId(), "NodeUnstageVolume " + v.volumeId(),
        "ControllerUnpublishVolume " + v.volumeId(), "DeleteVolume " + v.volumeId()), volumeCalls(c).subList(4, 8));
    assertTrue(manager.list().isEmpty());
  }

  @Test
  void mountWhileItsPublishingControllerIsNotReady_waitsForIt_thenPublishesFirst() {
    CsiVolume v = kit.drive(manager.create("mono", "d4", Optional.empty(), List.of(RWO), Map.of(), Secrets.none()));
    // The plugin restarted: its node half is healthy again, its controller half not yet.
    kit.setHealthy(PluginType.CSI_CONTROLLER, "mono", false);
    var f = manager.mount(VolumeClaim.of("mono", v.volumeId(), "a1", RWO, false));
    kit.scheduler.forwardTime(Duration.ofSeconds(5));
    assertTrue(!f.isDone(), "waiting for the controller, neither refused nor staged without its publish");
    assertEquals(0, kit.client("mono").calls("NodeStageVolume"));
    kit.setHealthy(PluginType.CSI_CONTROLLER, "mono", true);
    kit.drive(f);
    assertEquals(List.of("ControllerPublishVolume " + v.volumeId(), "NodeStageVolume " + v.volumeId(),
        "NodePublishVolume " + v.volumeId()), volumeCalls(kit.client("mono")).subList(1, 4));
  }

  @Test
  void mountWhoseControllerStaysUnready_failsAfterTheWait_namingIt() {
    CsiVolume v = kit.drive(manager.create("mono", "d5", Optional.empty(), List.of(RWO), Map.of(), Secrets.none()));
    kit.setHealthy(PluginType.CSI_CONTROLLER, "mono", false);
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mono", v.volumeId(), "a1", RWO, false)));
    assertEquals(VolumeException.Reason.PLUGIN_UNAVAILABLE, e.reason());
    assertTrue(e.getMessage().contains("controller plugin mono is registered but unhealthy"), e.getMessage());
    VolumeKit.await().until(() -> manager.list().isEmpty());
  }

  @Test
  void controllerPublishFailure_leavesNothing() {
    CsiVolume v = kit.drive(manager.create("mono", "d2", Optional.empty(), List.of(RWO), Map.of(), Secrets.none()));
    kit.client("mono").fail("ControllerPublishVolume", dev.csisupervisor.client.StatusCode.RESOURCE_EXHAUSTED, 1);
    VolumeException e = kit.failure(manager.mount(VolumeClaim.of("mono", v.volumeId(), "a1", RWO, false)));
    assertEquals(Optional.of("ControllerPublishVolume"), e.rpc());
    VolumeKit.await().until(() -> manager.list().isEmpty());
    assertEquals(0, kit.client("mono").calls("NodeStageVolume"));
  }

  @Test
  void stats_andAbnormalConditions_becomeEvents() {
    CsiVolume v = kit.drive(manager.create("mono", "d3", Optional.empty(), List.of(RWO), Map.of(), Secrets.none()));
    kit.drive(manager.mount(VolumeClaim.of("mono", v.volumeId(), "a1", RWO, false)));
    VolumeStats s = kit.drive(manager.stats("mono", v.volumeId(), Optional.of("a1")));
    assertTrue(!s.usage().isEmpty(), s.toString());

    kit.client("mono").condition = new VolumeStats.Condition(true, "disk on fire");
    kit.scheduler.forwardTime(Duration.ofSeconds(10));
    VolumeKit.await().until(() -> !manager.abnormal().isEmpty());
    assertEquals(Map.of("mono/" + v.volumeId(), "disk on fire"), manager.abnormal());
    // The condition is in the map before its event is emitted (on the checking thread): the event is waited for.
    VolumeKit.await().until(() -> kit.events.stream()
        .anyMatch(e -> e.kind() == VolumeEvent.Kind.ABNORMAL && e.message().equals("disk on fire")));

    kit.client("mono").condition = new VolumeStats.Condition(false, "");
    kit.scheduler.forwardTime(Duration.ofSeconds(10));
    VolumeKit.await().until(() -> manager.abnormal().isEmpty());
    VolumeKit.await().until(() -> kit.events.stream().anyMatch(e -> e.kind() == VolumeEvent.Kind.NORMAL));
  }

  @Test
  void expand_goesThroughTheControllerThenTheNode() {
    CsiVolume v = kit.drive(manager.create("mono", "d4", Optional.of(CapacityRange.atLeast(1 << 20)), List.of(RWO),
        Map.of(), Secrets.none()));
    kit.drive(manager.mount(VolumeClaim.of("mono", v.volumeId(), "a1", RWO, false)));
    long size = kit.drive(manager.expand("mono", v.volumeId(), CapacityRange.atLeast(2 << 20), Secrets.none()));
    assertTrue(size >= 2 << 20, "size " + size);
    assertEquals(1, kit.client("mono").calls("ControllerExpandVolume"));
  }
}
