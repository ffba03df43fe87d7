package dev.csisupervisor.supervisor;

import dev.csisupervisor.testing.FakeScheduler;
import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.client.PluginKind;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A scripted plugin for the state-machine tests: each call completes at once (or, for a hung
 * probe, fails after the probe timeout on the fake scheduler, as the real client's deadline does).
 */
final class FakeConnection implements PluginConnection {
  enum Probe { READY, NOT_READY, REFUSED, HANG }

  private final FakeScheduler scheduler;
  private final Duration callTimeout;
  volatile Probe probe = Probe.NOT_READY;
  volatile String vendorVersion = "1.0.0";
  volatile String name = "fake.csi.dev";
  /** Whether the plugin advertises CONTROLLER_SERVICE / serves the Node service. */
  volatile boolean servesController = true;
  volatile boolean servesNode = true;
  volatile boolean fingerprintFails;
  volatile boolean closed;
  volatile int probes;
  volatile int fingerprints;
  private final java.util.List<Runnable> lostListeners = new java.util.concurrent.CopyOnWriteArrayList<>();

  FakeConnection(FakeScheduler scheduler, Duration callTimeout) {
    this.scheduler = scheduler;
    this.callTimeout = callTimeout;
  }

  /** A connector that always hands out this connection (one plugin per test). */
  PluginConnection.Connector connector() {
    return (Path socket, Duration probeTimeout, Duration fingerprintTimeout) -> this;
  }

  @Override
  public void onLost(Runnable listener) {
    lostListeners.add(listener);
  }

  /** The plugin's end closes the connection, as a process killed with SIGKILL does. */
  void loseConnection() {
    lostListeners.forEach(Runnable::run);
  }

  @Override
  public CompletableFuture<Boolean> probe() {
    probes++;
    return switch (probe) {
      case READY -> CompletableFuture.completedFuture(true);
      case NOT_READY -> CompletableFuture.completedFuture(false);
      case REFUSED -> CompletableFuture.failedFuture(
          new IllegalStateException("connection refused on csi.sock"));
      case HANG -> {
        CompletableFuture<Boolean> f = new CompletableFuture<>();
        scheduler.schedule(() -> f.completeExceptionally(
                new TimeoutException("deadline exceeded after " + callTimeout.toMillis() + "ms")),
            callTimeout.toNanos(), TimeUnit.NANOSECONDS);
        yield f;
      }
    };
  }

  @Override
  public CompletableFuture<PluginFingerprint> fingerprint(PluginKind kind) {
    fingerprints++;
    if (fingerprintFails) {
      return CompletableFuture.failedFuture(new IllegalStateException("GetPluginInfo failed"));
    }
    // As the real client: controller RPCs only if CONTROLLER_SERVICE is advertised.
    boolean controller = kind != PluginKind.NODE && servesController;
    boolean node = kind != PluginKind.CONTROLLER && servesNode;
    if (kind == PluginKind.NODE && !servesNode) {
      return CompletableFuture.failedFuture(new IllegalStateException("NodeGetInfo: UNIMPLEMENTED"));
    }
    return CompletableFuture.completedFuture(new PluginFingerprint(name, vendorVersion, Map.of(),
        servesController ? Set.of("SERVICE:CONTROLLER_SERVICE") : Set.of(),
        controller ? Set.of("CREATE_DELETE_VOLUME") : Set.of(),
        node ? Set.of("STAGE_UNSTAGE_VOLUME") : Set.of(),
        node ? "node-1" : "", 0, Map.of()));
  }

  static PluginFingerprint fingerprintOf(PluginKind kind, String version) {
    boolean controller = kind != PluginKind.NODE;
    boolean node = kind != PluginKind.CONTROLLER;
    return new PluginFingerprint("fake.csi.dev", version, Map.of(),
        controller ? Set.of("SERVICE:CONTROLLER_SERVICE") : Set.of(),
        controller ? Set.of("CREATE_DELETE_VOLUME") : Set.of(),
        node ? Set.of("STAGE_UNSTAGE_VOLUME") : Set.of(),
        node ? "node-1" : "", 0, Map.of());
  }

  @Override
  public void close() {
    closed = true;
  }
}
