package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.Csi.codeOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.GetPluginCapabilitiesRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.NodeGetInfoRequest;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollIoHandler;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class MockCsiPluginServicesTest extends PluginOnSocketTest {

  private static final PluginCapability CONTROLLER_SERVICE = PluginCapability.newBuilder()
      .setService(PluginCapability.Service.newBuilder()
          .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE))
      .build();


  private List<PluginCapability> pluginCaps() {
    return csi.identity().getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance())
        .getCapabilitiesList();
  }

  private List<ControllerServiceCapability> controllerCaps() {
    return csi.controller().controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
        .getCapabilitiesList();
  }

  private List<NodeServiceCapability> nodeCaps() {
    return csi.node().nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
  }

  private GetPluginInfoResponse info() {
    return csi.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
  }

  @Test
  void getPluginInfo_defaults() throws Exception {
    start(b -> { });
    GetPluginInfoResponse info = info();
    assertEquals("mock.csi.dev", info.getName());
    assertEquals("1.0.0", info.getVendorVersion());
    assertTrue(info.getManifestMap().isEmpty());
  }

  @Test
  void getPluginInfo_configured_andVersionChangeTakesEffectOnNextCall() throws Exception {
    start(b -> b.name("ebs.csi.example.com").vendorVersion("1.2.3").manifest(Map.of("commit", "abc")));
    assertEquals("ebs.csi.example.com", info().getName());
    assertEquals("1.2.3", info().getVendorVersion());
    assertEquals(Map.of("commit", "abc"), info().getManifestMap());
    plugin.setVendorVersion("2.0.0");
    assertEquals("2.0.0", info().getVendorVersion());
    assertEquals("ebs.csi.example.com", info().getName(), "other fields unchanged");
    plugin.setName("other.csi.example.com");
    plugin.setManifest(Map.of("k", "v"));
    assertEquals("other.csi.example.com", info().getName());
    assertEquals(Map.of("k", "v"), info().getManifestMap());
    assertEquals("2.0.0", info().getVendorVersion());
  }

  @Test
  void controllerMode_reportsControllerService_andServesOnlyController() throws Exception {
    start(b -> b.mode(MockMode.CONTROLLER));
    assertEquals(List.of(CONTROLLER_SERVICE), pluginCaps());
    assertEquals(List.of(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
            ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME,
            ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
            ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS,
            ControllerServiceCapability.RPC.Type.CLONE_VOLUME),
        controllerCaps().stream().map(c -> c.getRpc().getType()).toList());
    assertEquals(Status.Code.UNIMPLEMENTED,
        codeOf(() -> csi.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance())));
    assertEquals(Status.Code.UNIMPLEMENTED,
        codeOf(() -> csi.node().nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance())));
  }

  @Test
  void nodeMode_servesNodeInfo_andNotController() throws Exception {
    start(b -> b.mode(MockMode.NODE).nodeId("worker-7").maxVolumesPerNode(39)
        .accessibleTopology(Map.of("topology.example.com/zone", "z1")));
    assertTrue(pluginCaps().isEmpty(), "a node plugin must not claim CONTROLLER_SERVICE");
    NodeGetInfoResponse info = csi.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
    assertEquals("worker-7", info.getNodeId());
    assertEquals(39, info.getMaxVolumesPerNode());
    assertEquals(Map.of("topology.example.com/zone", "z1"), info.getAccessibleTopology().getSegmentsMap());
    assertEquals(List.of(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME),
        nodeCaps().stream().map(c -> c.getRpc().getType()).toList());
    assertEquals(Status.Code.UNIMPLEMENTED, codeOf(this::controllerCaps));
  }

  @Test
  void monolithMode_servesBoth_andEveryRpcIsADriverCall() throws Exception {
    start(b -> { });
    assertEquals(List.of(CONTROLLER_SERVICE), pluginCaps());
    assertFalse(controllerCaps().isEmpty());
    NodeGetInfoResponse info = csi.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
    assertEquals("node-1", info.getNodeId());
    assertEquals(0, info.getMaxVolumesPerNode());
    assertFalse(info.hasAccessibleTopology(), "empty topology is left unset");
    // No longer UNIMPLEMENTED: the in-memory driver validates and answers (InMemoryDriverTest).
    assertEquals(Status.Code.INVALID_ARGUMENT,
        codeOf(() -> csi.controller().createVolume(CreateVolumeRequest.newBuilder().setName("v").build())));
    assertEquals(Status.Code.INVALID_ARGUMENT,
        codeOf(() -> csi.node().nodePublishVolume(NodePublishVolumeRequest.getDefaultInstance())));
  }

  @Test
  void unknownCapabilityNumbers_goOverTheWireAsTheyAre() throws Exception {
    start(b -> b.pluginCapabilities(1, 99).controllerCapabilities(12, 4242).nodeCapabilities(77));
    List<PluginCapability> plugin = pluginCaps();
    assertEquals(2, plugin.size());
    assertEquals(PluginCapability.Service.Type.CONTROLLER_SERVICE, plugin.get(0).getService().getType());
    assertEquals(99, plugin.get(1).getService().getTypeValue());
    assertEquals(PluginCapability.Service.Type.UNRECOGNIZED, plugin.get(1).getService().getType());

    List<ControllerServiceCapability> controller = controllerCaps();
    assertEquals(ControllerServiceCapability.RPC.Type.GET_VOLUME, controller.get(0).getRpc().getType());
    assertEquals(4242, controller.get(1).getRpc().getTypeValue());
    assertEquals(ControllerServiceCapability.RPC.Type.UNRECOGNIZED, controller.get(1).getRpc().getType());

    assertEquals(77, nodeCaps().get(0).getRpc().getTypeValue());
  }

  @Test
  void capabilities_changeWhileRunning() throws Exception {
    start(b -> b.pluginCapabilities(List.of()).nodeCapabilities(List.of()));
    assertTrue(pluginCaps().isEmpty());
    assertTrue(nodeCaps().isEmpty());

    plugin.setCapabilities(PluginCapability.Service.Type.CONTROLLER_SERVICE,
        PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS);
    plugin.setCapabilities(ControllerServiceCapability.RPC.Type.LIST_VOLUMES);
    plugin.setCapabilities(NodeServiceCapability.RPC.Type.GET_VOLUME_STATS, NodeServiceCapability.RPC.Type.EXPAND_VOLUME);
    assertEquals(2, pluginCaps().size());
    assertEquals(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS, pluginCaps().get(1).getService().getType());
    assertEquals(List.of(3), controllerCaps().stream().map(c -> c.getRpc().getTypeValue()).toList());
    assertEquals(List.of(2, 3), nodeCaps().stream().map(c -> c.getRpc().getTypeValue()).toList());

    PluginCapability onlineExpansion = PluginCapability.newBuilder()
        .setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
            .setType(PluginCapability.VolumeExpansion.Type.ONLINE))
        .build();
    plugin.setPluginCapabilities(List.of(onlineExpansion));
    assertEquals(List.of(onlineExpansion), pluginCaps());
    plugin.setControllerCapabilities(100);
    assertEquals(100, controllerCaps().get(0).getRpc().getTypeValue());
    plugin.setNodeInfo("node-9", 5, Map.of());
    assertEquals("node-9", csi.node().nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getNodeId());
  }

  @Test
  void explicitPluginCapabilities_overrideTheModeDefault() throws Exception {
    start(b -> b.mode(MockMode.CONTROLLER).pluginCapabilities(List.of()));
    assertTrue(pluginCaps().isEmpty(), "a controller that forgets CONTROLLER_SERVICE can be scripted");
  }

  @Test
  void unrecognizedEnumConstant_isRejectedWithAHint() {
    MockCsiPlugin.Builder builder = MockCsiPlugin.builder();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> builder.controllerCapabilities(ControllerServiceCapability.RPC.Type.UNRECOGNIZED));
    assertTrue(e.getMessage().contains("controllerCapabilities") && e.getMessage().contains("raw int"),
        e.getMessage());
    assertThrows(NullPointerException.class,
        () -> builder.nodeCapabilities((NodeServiceCapability.RPC.Type) null));
  }

  @Test
  void sharedEventLoopGroup_servesManyPlugins_andOutlivesThem() throws Exception {
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    try (MockCsiPlugin a = MockCsiPlugin.builder().socket(dir.resolve("a.sock")).name("a")
            .eventLoopGroup(group).start();
        MockCsiPlugin b = MockCsiPlugin.builder().socket(dir.resolve("b.sock")).name("b")
            .eventLoopGroup(group).start();
        Csi ca = new Csi(a.socket());
        Csi cb = new Csi(b.socket())) {
      assertEquals("a", ca.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
      assertEquals("b", cb.identity().getPluginInfo(GetPluginInfoRequest.getDefaultInstance()).getName());
      a.stop();
      assertFalse(group.isShuttingDown(), "a plugin must not shut a shared group down");
      assertTrue(cb.ready());
      b.crash();
      assertFalse(group.isShuttingDown());
    } finally {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
    }
  }
}
