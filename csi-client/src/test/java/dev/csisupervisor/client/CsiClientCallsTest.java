package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Every call of {@link CsiClient} against the mock plugin over a real unix socket. */
class CsiClientCallsTest extends PluginSocketTest {
  /** The mock's default controller capabilities. */
  private static final Set<String> MOCK_CONTROLLER_CAPS = Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME",
      "CREATE_DELETE_SNAPSHOT", "LIST_SNAPSHOTS", "CLONE_VOLUME");

  private MockCsiPlugin.Builder mock(MockMode mode) {
    return MockCsiPlugin.builder().socket(socket).mode(mode).name("ebs.csi.example.com").vendorVersion("1.2.3");
  }

  private CsiClient start(MockCsiPlugin.Builder builder) throws Exception {
    plugin = builder.start();
    client = CsiClient.create(socket);
    return client;
  }

  @ParameterizedTest
  @EnumSource(MockMode.class)
  void probe_readyPlugin_isReady(MockMode mode) throws Exception {
    start(mock(mode));
    assertEquals(ProbeResult.READY, client.probe());
    assertEquals(ProbeResult.READY, client.probeAsync().get());
  }

  @Test
  void probe_initializingPlugin_isNotReady_untilItIs() throws Exception {
    start(mock(MockMode.NODE).neverReady());
    assertEquals(ProbeResult.NOT_READY, client.probe());
    plugin.setReady(true);
    assertEquals(ProbeResult.READY, client.probe());
  }

  @Test
  void socket_isTheAbsolutePath() throws Exception {
    start(mock(MockMode.NODE));
    assertEquals(socket.toAbsolutePath(), client.socket());
  }

  @ParameterizedTest
  @EnumSource(MockMode.class)
  void pluginInfo_returnsNameVersionAndManifest(MockMode mode) throws Exception {
    start(mock(mode).manifest(Map.of("commit", "abc123", "url", "https://example.com")));
    CsiPluginInfo info = client.pluginInfo();
    assertEquals(
        new CsiPluginInfo("ebs.csi.example.com", "1.2.3", Map.of("commit", "abc123", "url", "https://example.com")),
        info);
    assertEquals(info, client.pluginInfoAsync().get());
  }

  @Test
  void pluginInfo_seesVersionChangeOnNextCall() throws Exception {
    start(mock(MockMode.CONTROLLER));
    assertEquals("1.2.3", client.pluginInfo().vendorVersion());
    plugin.setVendorVersion("1.3.0");
    assertEquals("1.3.0", client.pluginInfo().vendorVersion());
  }

  @Test
  void pluginCapabilities_controllerPlugin_hasControllerService() throws Exception {
    start(mock(MockMode.CONTROLLER));
    assertEquals(Set.of(CsiCapabilities.CONTROLLER_SERVICE), client.pluginCapabilities());
  }

  @Test
  void pluginCapabilities_nodePlugin_hasNone() throws Exception {
    start(mock(MockMode.NODE));
    assertEquals(Set.of(), client.pluginCapabilities());
  }

  @Test
  void pluginCapabilities_servicesAndVolumeExpansion_namedWithTheirKind() throws Exception {
    start(mock(MockMode.MONOLITH).pluginCapabilities(List.of(
        service(PluginCapability.Service.Type.CONTROLLER_SERVICE),
        service(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS),
        PluginCapability.newBuilder()
            .setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                .setType(PluginCapability.VolumeExpansion.Type.ONLINE))
            .build())));
    assertEquals(
        Set.of("SERVICE:CONTROLLER_SERVICE", "SERVICE:VOLUME_ACCESSIBILITY_CONSTRAINTS", "VOLUME_EXPANSION:ONLINE"),
        client.pluginCapabilities());
  }

  @ParameterizedTest
  @EnumSource(value = MockMode.class, names = {"CONTROLLER", "MONOLITH"})
  void controllerCapabilities_returnsRpcNames(MockMode mode) throws Exception {
    start(mock(mode).controllerCapabilities(
        ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
        ControllerServiceCapability.RPC.Type.EXPAND_VOLUME));
    assertEquals(Set.of("CREATE_DELETE_VOLUME", "EXPAND_VOLUME"), client.controllerCapabilities());
  }

  @Test
  void controllerCapabilities_onNodeOnlyPlugin_isUnimplementedStatus() throws Exception {
    start(mock(MockMode.NODE));
    CsiStatusException e = assertThrows(CsiStatusException.class, client::controllerCapabilities);
    assertEquals(StatusCode.UNIMPLEMENTED, e.code());
    assertEquals(CsiErrorKind.PLUGIN_ERROR, e.kind());
    assertEquals("csi.v1.Controller/ControllerGetCapabilities", e.getMethod().orElseThrow());
  }

  @ParameterizedTest
  @EnumSource(value = MockMode.class, names = {"NODE", "MONOLITH"})
  void nodeCapabilitiesAndInfo_returnWhatThePluginSays(MockMode mode) throws Exception {
    start(mock(mode)
        .nodeCapabilities(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
            NodeServiceCapability.RPC.Type.GET_VOLUME_STATS)
        .nodeId("i-0abc")
        .maxVolumesPerNode(39)
        .accessibleTopology(Map.of("topology.kubernetes.io/zone", "eu-west-1a")));
    assertEquals(Set.of("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS"), client.nodeCapabilities());
    assertEquals(
        new CsiNodeInfo("i-0abc", 39, Map.of("topology.kubernetes.io/zone", "eu-west-1a")),
        client.nodeInfo());
  }

  @Test
  void nodeInfo_withoutLimitOrTopology_isZeroAndEmpty() throws Exception {
    start(mock(MockMode.NODE).nodeId("n1"));
    assertEquals(new CsiNodeInfo("n1", 0, Map.of()), client.nodeInfo());
  }

  @Test
  void nodeInfo_onControllerOnlyPlugin_isUnimplementedStatus() throws Exception {
    start(mock(MockMode.CONTROLLER));
    CsiStatusException e = assertThrows(CsiStatusException.class, client::nodeInfo);
    assertEquals(StatusCode.UNIMPLEMENTED, e.code());
  }

  @Test
  void fingerprint_controller_hasNoNodeFields() throws Exception {
    start(mock(MockMode.CONTROLLER).manifest(Map.of("k", "v")));
    PluginFingerprint fp = client.fingerprint(PluginKind.CONTROLLER);
    assertEquals(new PluginFingerprint("ebs.csi.example.com", "1.2.3", Map.of("k", "v"),
        Set.of("SERVICE:CONTROLLER_SERVICE"), MOCK_CONTROLLER_CAPS,
        Set.of(), "", 0, Map.of()), fp);
    assertTrue(fp.nodeInfo().isEmpty());
  }

  @Test
  void fingerprint_node_hasNodeFieldsButNoControllerCapabilities() throws Exception {
    start(mock(MockMode.NODE).nodeId("node-7").maxVolumesPerNode(25)
        .accessibleTopology(Map.of("zone", "Z1")));
    PluginFingerprint fp = client.fingerprint(PluginKind.NODE);
    assertEquals(new PluginFingerprint("ebs.csi.example.com", "1.2.3", Map.of(), Set.of(), Set.of(),
        Set.of("STAGE_UNSTAGE_VOLUME"), "node-7", 25, Map.of("zone", "Z1")), fp);
    assertEquals(new CsiNodeInfo("node-7", 25, Map.of("zone", "Z1")), fp.nodeInfo().orElseThrow());
  }

  @Test
  void fingerprint_monolith_hasEverything() throws Exception {
    start(mock(MockMode.MONOLITH).nodeId("node-7"));
    PluginFingerprint fp = client.fingerprint(PluginKind.MONOLITH);
    assertEquals(new PluginFingerprint("ebs.csi.example.com", "1.2.3", Map.of(),
        Set.of("SERVICE:CONTROLLER_SERVICE"), MOCK_CONTROLLER_CAPS,
        Set.of("STAGE_UNSTAGE_VOLUME"), "node-7", 0, Map.of()), fp);
    assertEquals(fp, client.fingerprintAsync(PluginKind.MONOLITH).get());
  }

  @Test
  void fingerprint_asMonolithOfNodeOnlyPlugin_hasItsNodeHalfOnly() throws Exception {
    // The plugin does not advertise CONTROLLER_SERVICE: no Controller RPC is made (it would
    // answer UNIMPLEMENTED and fail the whole fingerprint).
    start(mock(MockMode.NODE).nodeId("node-7"));
    PluginFingerprint fp = client.fingerprint(PluginKind.MONOLITH);
    assertFalse(fp.servesController());
    assertTrue(fp.servesNode());
    assertEquals(Set.of(), fp.controllerCapabilities());
    assertEquals("node-7", fp.nodeId());
  }

  @Test
  void fingerprint_asMonolithOfControllerOnlyPlugin_hasItsControllerHalfOnly() throws Exception {
    start(mock(MockMode.CONTROLLER));
    PluginFingerprint fp = client.fingerprint(PluginKind.MONOLITH);
    assertTrue(fp.servesController());
    assertFalse(fp.servesNode(), "a Node service answering UNIMPLEMENTED is no node half");
    assertEquals(MOCK_CONTROLLER_CAPS, fp.controllerCapabilities());
  }

  @Test
  void fingerprint_asNodeOfControllerOnlyPlugin_failsWithTheNodeCall() throws Exception {
    start(mock(MockMode.CONTROLLER));
    CsiStatusException e = assertThrows(CsiStatusException.class, () -> client.fingerprint(PluginKind.NODE));
    assertEquals(StatusCode.UNIMPLEMENTED, e.code());
  }

  @Test
  void fingerprint_asControllerOfPluginWithoutControllerService_skipsTheControllerCall() throws Exception {
    // Controller service bound but not advertised: CSI says the CO must not call it.
    start(mock(MockMode.CONTROLLER).pluginCapabilities(new int[0]));
    PluginFingerprint fp = client.fingerprint(PluginKind.CONTROLLER);
    assertFalse(fp.servesController());
    assertEquals(Set.of(), fp.controllerCapabilities());
  }

  @Test
  void fingerprint_hasItsOwnTimeout_longerThanTheProbes() throws Exception {
    start(mock(MockMode.MONOLITH).latency(java.time.Duration.ofMillis(400)));
    client.close();
    client = CsiClient.create(socket, CsiClientOptions.defaults()
        .withCallTimeout(java.time.Duration.ofMillis(200)));
    assertThrows(CsiDeadlineExceededException.class, client::probe);
    PluginFingerprint fp = client.fingerprint(PluginKind.MONOLITH);
    assertTrue(fp.servesController() && fp.servesNode());
    client.close();
    client = CsiClient.create(socket, CsiClientOptions.defaults()
        .withFingerprintTimeout(java.time.Duration.ofMillis(200)));
    CsiDeadlineExceededException e = assertThrows(CsiDeadlineExceededException.class,
        () -> client.fingerprint(PluginKind.MONOLITH));
    assertEquals(java.time.Duration.ofMillis(200), e.timeout());
  }

  @Test
  void fingerprint_derivesWhatASchedulerNeeds_andKeepsUnknownValues() throws Exception {
    start(mock(MockMode.MONOLITH)
        .pluginCapabilities(List.of(
            PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                .setType(PluginCapability.Service.Type.CONTROLLER_SERVICE)).build(),
            PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                .setType(PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS)).build(),
            PluginCapability.newBuilder().setService(PluginCapability.Service.newBuilder()
                .setTypeValue(42)).build(),
            PluginCapability.newBuilder().setVolumeExpansion(PluginCapability.VolumeExpansion.newBuilder()
                .setType(PluginCapability.VolumeExpansion.Type.ONLINE)).build()))
        .controllerCapabilities(ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER,
            ControllerServiceCapability.RPC.Type.VOLUME_CONDITION)
        .nodeCapabilities(77));
    PluginFingerprint fp = client.fingerprint(PluginKind.MONOLITH);
    assertEquals(Set.of(CsiCapabilities.CONTROLLER_SERVICE, CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS,
        "SERVICE:UNKNOWN(42)", CsiCapabilities.VOLUME_EXPANSION_ONLINE), fp.pluginCapabilities());
    assertEquals(Set.of(CsiCapabilities.SINGLE_NODE_MULTI_WRITER, CsiCapabilities.VOLUME_CONDITION),
        fp.controllerCapabilities());
    assertEquals(Set.of("UNKNOWN(77)"), fp.nodeCapabilities());
  }

  @Test
  void fingerprint_changesWhenThePluginChanges() throws Exception {
    start(mock(MockMode.CONTROLLER));
    PluginFingerprint before = client.fingerprint(PluginKind.CONTROLLER);
    plugin.setVendorVersion("2.0.0");
    plugin.setControllerCapabilities(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME);
    PluginFingerprint after = client.fingerprint(PluginKind.CONTROLLER);
    assertFalse(before.equals(after));
    assertEquals("2.0.0", after.vendorVersion());
    assertEquals(Set.of("CREATE_DELETE_VOLUME"), after.controllerCapabilities());
  }

  @Test
  void unknownEnumValuesFromNewerPlugin_areKept() throws Exception {
    start(mock(MockMode.MONOLITH)
        .pluginCapabilities(1, 42)
        .controllerCapabilities(1, 99)
        .nodeCapabilities(77));
    PluginFingerprint fp = client.fingerprint(PluginKind.MONOLITH);
    assertEquals(Set.of("SERVICE:CONTROLLER_SERVICE", "SERVICE:UNKNOWN(42)"), fp.pluginCapabilities());
    assertEquals(Set.of("CREATE_DELETE_VOLUME", "UNKNOWN(99)"), fp.controllerCapabilities());
    assertEquals(Set.of("UNKNOWN(77)"), fp.nodeCapabilities());
  }

  @Test
  void manyConcurrentCalls_allSucceedOnOneClient() throws Exception {
    start(mock(MockMode.MONOLITH));
    List<CompletableFuture<ProbeResult>> probes = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      probes.add(client.probeAsync());
    }
    for (CompletableFuture<ProbeResult> probe : probes) {
      assertSame(ProbeResult.READY, probe.get());
    }
    assertEquals(200, plugin.probeCount());
  }

  @Test
  void manyClients_shareIoThreads() throws Exception {
    start(mock(MockMode.NODE));
    List<CsiClient> clients = new ArrayList<>();
    try {
      for (int i = 0; i < 50; i++) {
        CsiClient c = CsiClient.create(socket);
        clients.add(c);
        assertTrue(c.probe().ready());
      }
      long ioThreads = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> t.getName().startsWith("csi-client-io")).count();
      assertTrue(ioThreads <= SharedEventLoop.THREADS, "I/O threads: " + ioThreads);
    } finally {
      clients.forEach(CsiClient::close);
    }
  }

  private static PluginCapability service(PluginCapability.Service.Type type) {
    return PluginCapability.newBuilder()
        .setService(PluginCapability.Service.newBuilder().setType(type))
        .build();
  }
}
