package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The interface's default methods (blocking calls, fingerprint composition) with a hand-driven
 * fake: this is also how callers can fake a plugin without a socket.
 */
class CsiClientDefaultsTest {
  private static final Path SOCKET = Path.of("/run/csi/p.sock");

  /** Each async call returns a future the test completes by hand. */
  private static final class FakeClient implements CsiClient {
    final CompletableFuture<ProbeResult> probe = new CompletableFuture<>();
    final CompletableFuture<CsiPluginInfo> info = new CompletableFuture<>();
    final CompletableFuture<Set<String>> plugin = new CompletableFuture<>();
    final CompletableFuture<Set<String>> controller = new CompletableFuture<>();
    final CompletableFuture<Set<String>> node = new CompletableFuture<>();
    final CompletableFuture<CsiNodeInfo> nodeInfo = new CompletableFuture<>();
    final AtomicInteger controllerCalls = new AtomicInteger();
    final AtomicInteger nodeCalls = new AtomicInteger();

    // Volume calls are not what this test is about: each fails at once.
    private static <T> CompletableFuture<T> unused() {
      return CompletableFuture.failedFuture(new UnsupportedOperationException("not faked"));
    }
    @Override public CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest r) { return unused(); }
    @Override public CompletableFuture<Void> nodeUnstageVolumeAsync(String v, Path p) { return unused(); }
    @Override public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest r) { return unused(); }
    @Override public CompletableFuture<Void> nodeUnpublishVolumeAsync(String v, Path p) { return unused(); }
    @Override public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String v, Path p,
        java.util.Optional<Path> s) { return unused(); }
    @Override public CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest r) { return unused(); }
    @Override public CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest r) { return unused(); }
    @Override public CompletableFuture<Void> deleteVolumeAsync(String v, Secrets s) { return unused(); }
    @Override public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(
        ControllerPublishRequest r) { return unused(); }
    @Override public CompletableFuture<Void> controllerUnpublishVolumeAsync(String v, String n, Secrets s) {
      return unused();
    }
    @Override public CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String v,
        CapacityRange c, java.util.Optional<VolumeCapability> cap, Secrets s) { return unused(); }

    @Override public CompletableFuture<CsiSnapshot> createSnapshotAsync(CreateSnapshotRequest r) { return unused(); }
    @Override public CompletableFuture<Void> deleteSnapshotAsync(String id, Secrets s) { return unused(); }
    @Override public CompletableFuture<SnapshotPage> listSnapshotsAsync(ListSnapshotsRequest r) { return unused(); }
    @Override public CompletableFuture<VolumePage> listVolumesAsync(int max, java.util.Optional<String> t) {
      return unused();
    }
    @Override public CompletableFuture<VolumeEntry> controllerGetVolumeAsync(String v) { return unused(); }
    @Override public CompletableFuture<ValidationResult> validateVolumeCapabilitiesAsync(
        ValidateCapabilitiesRequest r) { return unused(); }
    @Override public CompletableFuture<CsiCapacity> getCapacityAsync(CapacityRequest r) { return unused(); }
    @Override public CompletableFuture<Void> controllerModifyVolumeAsync(String v, Map<String, String> m,
        Secrets s) { return unused(); }

    @Override public Path socket() { return SOCKET; }
    @Override public CompletableFuture<ProbeResult> probeAsync() { return probe; }
    @Override public CompletableFuture<CsiPluginInfo> pluginInfoAsync() { return info; }
    @Override public CompletableFuture<Set<String>> pluginCapabilitiesAsync() { return plugin; }
    @Override public CompletableFuture<Set<String>> controllerCapabilitiesAsync() {
      controllerCalls.incrementAndGet();
      return controller;
    }
    @Override public CompletableFuture<Set<String>> nodeCapabilitiesAsync() {
      nodeCalls.incrementAndGet();
      return node;
    }
    @Override public CompletableFuture<CsiNodeInfo> nodeInfoAsync() {
      nodeCalls.incrementAndGet();
      return nodeInfo;
    }
    @Override public void onConnectionLost(Runnable listener) {}
    @Override public void close() {}
  }

  private final FakeClient fake = new FakeClient();

  @Test
  void fingerprint_controller_asksOnlyControllerQuestions() throws Exception {
    fake.info.complete(new CsiPluginInfo("n", "1", Map.of()));
    fake.plugin.complete(Set.of(CsiCapabilities.CONTROLLER_SERVICE));
    fake.controller.complete(Set.of("CREATE_DELETE_VOLUME"));
    PluginFingerprint fp = fake.fingerprint(PluginKind.CONTROLLER);
    assertEquals(0, fake.nodeCalls.get());
    assertEquals(Set.of("CREATE_DELETE_VOLUME"), fp.controllerCapabilities());
    assertEquals("", fp.nodeId());
  }

  @Test
  void fingerprint_node_asksOnlyNodeQuestions() throws Exception {
    fake.info.complete(new CsiPluginInfo("n", "1", Map.of()));
    fake.plugin.complete(Set.of());
    fake.node.complete(Set.of("STAGE_UNSTAGE_VOLUME"));
    fake.nodeInfo.complete(new CsiNodeInfo("node-1", 0, Map.of()));
    PluginFingerprint fp = fake.fingerprint(PluginKind.NODE);
    assertEquals(0, fake.controllerCalls.get());
    assertEquals("node-1", fp.nodeId());
  }

  @Test
  void fingerprint_controllerWithoutControllerService_makesNoControllerCall() throws Exception {
    fake.info.complete(new CsiPluginInfo("n", "1", Map.of()));
    fake.plugin.complete(Set.of("SERVICE:UNKNOWN(42)"));
    PluginFingerprint fp = fake.fingerprint(PluginKind.CONTROLLER);
    assertEquals(0, fake.controllerCalls.get());
    assertEquals(0, fake.nodeCalls.get());
    assertFalse(fp.servesController());
    assertEquals(Set.of("SERVICE:UNKNOWN(42)"), fp.pluginCapabilities());
  }

  @Test
  void fingerprint_monolith_asksControllerOnlyOnceItsCapabilityIsKnown() throws Exception {
    CompletableFuture<PluginFingerprint> fp = fake.fingerprintAsync(PluginKind.MONOLITH);
    assertEquals(0, fake.controllerCalls.get());
    assertEquals(2, fake.nodeCalls.get(), "node calls run concurrently with the identity calls");
    fake.plugin.complete(Set.of(CsiCapabilities.CONTROLLER_SERVICE));
    assertEquals(1, fake.controllerCalls.get());
    fake.info.complete(new CsiPluginInfo("n", "1", Map.of()));
    fake.controller.complete(Set.of("CREATE_DELETE_VOLUME"));
    fake.node.completeExceptionally(new CsiStatusException(SOCKET, "csi.v1.Node/NodeGetCapabilities",
        StatusCode.UNIMPLEMENTED, ""));
    fake.nodeInfo.completeExceptionally(new CsiStatusException(SOCKET, "csi.v1.Node/NodeGetInfo",
        StatusCode.UNIMPLEMENTED, ""));
    PluginFingerprint done = fp.get();
    assertTrue(done.servesController());
    assertFalse(done.servesNode());
  }

  @Test
  void fingerprint_waitsForAllParts_thenReportsTheFirstFailureInOrder() {
    CompletableFuture<PluginFingerprint> fp = fake.fingerprintAsync(PluginKind.MONOLITH);
    fake.nodeInfo.completeExceptionally(new SocketNotFoundException(SOCKET, null));
    fake.info.completeExceptionally(new ConnectionRefusedException(SOCKET));
    fake.plugin.complete(Set.of());
    fake.controller.complete(Set.of());
    assertFalse(fp.isDone(), "must wait for every part");
    fake.node.complete(Set.of());
    Throwable failure = fp.handle((v, t) -> t).join();
    assertTrue(failure instanceof ConnectionRefusedException, String.valueOf(failure));
  }

  @Test
  void fingerprint_cancelled_cancelsItsParts() {
    CompletableFuture<PluginFingerprint> fp = fake.fingerprintAsync(PluginKind.MONOLITH);
    fp.cancel(true);
    assertTrue(fake.info.isCancelled());
    assertTrue(fake.nodeInfo.isCancelled());
  }

  @Test
  void blockingCall_rethrowsTheCsiException() {
    CsiStatusException failure = new CsiStatusException(SOCKET, "csi.v1.Identity/Probe", StatusCode.INTERNAL, "x");
    fake.probe.completeExceptionally(failure);
    assertSame(failure, assertThrows(CsiStatusException.class, fake::probe));
  }

  @Test
  void blockingCall_rethrowsRuntimeExceptionsAsTheyAre() {
    IllegalStateException bug = new IllegalStateException("bug");
    fake.probe.completeExceptionally(bug);
    assertSame(bug, assertThrows(IllegalStateException.class, fake::probe));
  }

  @Test
  void blockingCall_onCancelledFuture_isCallCancelled() {
    fake.probe.cancel(true);
    CallCancelledException e = assertThrows(CallCancelledException.class, fake::probe);
    assertEquals("csi.v1.Identity/Probe on /run/csi/p.sock was cancelled: the call's future was cancelled",
        e.getMessage());
  }

  @Test
  void find_unwrapsNestedFailures_andIsEmptyWithoutOne() {
    ConnectionRefusedException refused = new ConnectionRefusedException(SOCKET);
    assertSame(refused, CsiException.find(
        new java.util.concurrent.CompletionException(new java.util.concurrent.ExecutionException(refused))).orElseThrow());
    assertTrue(CsiException.find(new RuntimeException("x")).isEmpty());
    assertTrue(CsiException.find(null).isEmpty());
  }
}
