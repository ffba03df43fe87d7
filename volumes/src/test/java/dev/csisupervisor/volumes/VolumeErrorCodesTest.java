package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.state.InMemoryStateStore;
import io.grpc.Status;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every gRPC status code from every CSI RPC the manager makes, scripted in the real mock plugin
 * (the call fails there, the driver never sees it): the spec's transient codes are retried and the
 * operation then succeeds; any other code fails the operation at once naming the RPC and the code
 * (a mount then leaves nothing staged or published), or, for an undoing call, keeps the unmount
 * pending until the call works; NOT_FOUND on an undoing call means there is nothing left to undo.
 */
class VolumeErrorCodesTest {
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final Set<StatusCode> TRANSIENT =
      Set.of(StatusCode.UNAVAILABLE, StatusCode.DEADLINE_EXCEEDED, StatusCode.ABORTED);
  private static final List<String> MOUNT_RPCS =
      List.of("ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume");
  private static final List<String> UNDO_RPCS =
      List.of("NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume");
  private static final List<String> OTHER_RPCS =
      List.of("NodeGetVolumeStats", "NodeExpandVolume", "ControllerExpandVolume", "CreateVolume", "DeleteVolume");

  private VolumeKit kit;
  private MockCsiPlugin plugin;
  private VolumeManager manager;
  private String vol;

  @BeforeEach
  void setUp() throws Exception {
    kit = new VolumeKit(new InMemoryStateStore());
    plugin = kit.startPlugin("mock");
    kit.registerNode("mock");
    kit.registerController("mock", VolumeKit.ALL_CONTROLLER_CAPS);
    manager = kit.manager();
    vol = kit.createVolume("mock", "v1");
  }

  @AfterEach
  void tearDown() {
    kit.close();
  }

  static Stream<Arguments> cases(List<String> rpcs) {
    return rpcs.stream().flatMap(rpc -> Arrays.stream(StatusCode.values())
        .filter(c -> c != StatusCode.OK).map(code -> Arguments.of(rpc, code)));
  }

  static Stream<Arguments> mountCases() {
    return cases(MOUNT_RPCS);
  }

  static Stream<Arguments> undoCases() {
    return cases(UNDO_RPCS);
  }

  static Stream<Arguments> otherCases() {
    return cases(OTHER_RPCS);
  }

  private void fail(String rpc, StatusCode code, int times) {
    plugin.failCalls(rpc, Status.fromCodeValue(code.value()).getCode(), "scripted " + code, times);
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("mountCases")
  void aMountRpcsCode_isRetriedIfTransient_elseFailsTheMountLeavingNothing(String rpc, StatusCode code) {
    fail(rpc, code, 2);
    long before = plugin.callCount(rpc);
    CompletableFuture<MountedVolume> mount = manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false));
    if (TRANSIENT.contains(code)) {
      kit.drive(mount);
      assertEquals(before + 3, plugin.callCount(rpc), "two failures, then the call that worked");
      kit.drive(manager.unmount("mock", vol, "a1"));
    } else {
      VolumeException e = kit.failure(mount);
      assertEquals(Optional.of(rpc), e.rpc(), e.getMessage());
      assertEquals(Optional.of(code), e.code(), e.getMessage());
      assertTrue(e.getMessage().contains("scripted " + code), e.getMessage());
      assertEquals(before + 1, plugin.callCount(rpc), "not retried");
      plugin.clearFaults();
      VolumeKit.await().until(() -> manager.list().isEmpty());
    }
    assertEquals(Map.of(), plugin.stagedPaths());
    assertEquals(Map.of(), plugin.publishedPaths());
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("undoCases")
  void anUndoingRpcsCode_keepsTheUnmountPendingUntilItWorks_andNotFoundIsCheckedAgainstTheMountTable(String rpc, StatusCode code) {
    kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    fail(rpc, code, 1);
    long before = plugin.callCount(rpc);
    CompletableFuture<Void> unmount = manager.unmount("mock", vol, "a1");
    kit.drive(unmount);
    assertTrue(manager.list().isEmpty());
    if (code == StatusCode.NOT_FOUND && rpc.equals("ControllerUnpublishVolume")) {
      assertEquals(before + 1, plugin.callCount(rpc), "NOT_FOUND: the volume is gone, nothing left to undo");
    } else {
      // NOT_FOUND of a node RPC too: the plugin did nothing, the path is still a mount, so it is not believed.
      assertEquals(before + 2, plugin.callCount(rpc), "failed once, tried again, done");
    }
    assertEquals(Map.of(), plugin.stagedPaths());
    assertEquals(Map.of(), plugin.publishedPaths());
    assertEquals(java.util.Set.of(), kit.mounts.all());
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"NodeUnpublishVolume", "NodeUnstageVolume"})
  void notFound_whenThePathIsReallyUnmounted_isDoneAtOnce(String rpc) {
    MountedVolume m = kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    kit.mounts.lose(rpc.equals("NodeUnpublishVolume") ? m.targetPath() : m.stagingPath().orElseThrow());
    fail(rpc, StatusCode.NOT_FOUND, 1);
    long before = plugin.callCount(rpc);
    kit.drive(manager.unmount("mock", vol, "a1"));
    assertTrue(manager.list().isEmpty());
    assertEquals(before + 1, plugin.callCount(rpc), "NOT_FOUND and not mounted: nothing left to undo");
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("otherCases")
  void anotherRpcsCode_failsTheOperationNamingRpcAndCode_orIsRetriedIfTransient(String rpc, StatusCode code) {
    if (rpc.startsWith("Node") || rpc.equals("ControllerExpandVolume")) {
      kit.drive(manager.mount(VolumeClaim.of("mock", vol, "a1", RWO, false)));
    }
    if (rpc.equals("NodeExpandVolume")) {
      // Without a controller the manager expands on the node alone (the mock's controller may not ask for it).
      kit.registry.deregister(dev.csisupervisor.registry.PluginType.CSI_CONTROLLER, "mock", "alloc-mock");
    }
    fail(rpc, code, 2);
    long callsBefore = plugin.callCount(rpc);
    CompletableFuture<?> op = switch (rpc) {
      case "NodeGetVolumeStats" -> manager.stats("mock", vol, Optional.empty());
      case "CreateVolume" -> manager.create("mock", "new-" + code, Optional.empty(), List.of(RWO), Map.of(),
          Secrets.none());
      case "DeleteVolume" -> manager.delete("mock", vol, Secrets.none());
      default -> manager.expand("mock", vol, CapacityRange.atLeast(2L << 30), Secrets.none());
    };
    if (TRANSIENT.contains(code)) {
      kit.drive(op);
      assertEquals(3, plugin.callCount(rpc) - callsBefore, "two failures, then the call that worked");
    } else {
      VolumeException e = kit.failure(op);
      assertEquals(1, plugin.callCount(rpc) - callsBefore, "not retried");
      assertEquals(Optional.of(rpc), e.rpc(), e.getMessage());
      assertEquals(Optional.of(code), e.code(), e.getMessage());
    }
    assertFalse(manager.list().stream().anyMatch(VolumeRecord::hasWork), "nothing left in flight");
  }
}
