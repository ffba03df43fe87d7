package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.ProbeResponse;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;
import java.util.function.UnaryOperator;

/**
 * The scripted behaviour of one mock plugin: what the next call answers.
 *
 * <p>Thread-safe. Every setting is a volatile field read once per call, so a change takes effect
 * on the next call. Hanging probes are the one piece of shared mutable state that needs a lock:
 * parking a call and releasing all parked calls must not interleave, or a probe could park just
 * after {@link #hangProbes(boolean) hangProbes(false)} drained the set and then hang forever.
 */
final class Script {

  /** Whether Probe reports ready, before flapping is applied. */
  private record Readiness(Kind kind, long readyAtNanos) {
    enum Kind { READY, NOT_READY, AFTER }

    static final Readiness READY = new Readiness(Kind.READY, 0);
    static final Readiness NOT_READY = new Readiness(Kind.NOT_READY, 0);

    boolean isReady(long nowNanos) {
      return switch (kind) {
        case READY -> true;
        case NOT_READY -> false;
        // Subtraction, not comparison: nanoTime values may wrap.
        case AFTER -> nowNanos - readyAtNanos >= 0;
      };
    }
  }

  /** Ready for one period, not ready for the next, and so on, from {@code startNanos}. */
  private record Flap(long startNanos, long periodNanos) {
    boolean isReady(long nowNanos) {
      long elapsed = nowNanos - startNanos;
      if (elapsed < 0) {
        return true;
      }
      return (elapsed / periodNanos) % 2 == 0;
    }
  }

  private final LongSupplier ticker;
  private final LongAdder probeCount = new LongAdder();

  private volatile Readiness readiness = Readiness.READY;
  private volatile Flap flap;
  private volatile Status probeFailure;
  private volatile long latencyNanos;
  private volatile boolean omitReady;
  /** Probes start hanging once the plugin has been ready this long; negative: never. */
  private volatile long hangAfterReadyNanos = -1;
  private volatile long firstReadyNanos;
  private volatile boolean seenReady;

  private volatile GetPluginInfoResponse pluginInfo;
  private volatile List<PluginCapability> pluginCapabilities;
  private volatile List<ControllerServiceCapability> controllerCapabilities;
  private volatile List<NodeServiceCapability> nodeCapabilities;
  private volatile NodeGetInfoResponse nodeInfo;

  private final Object hangLock = new Object();
  private boolean hang; // guarded by hangLock
  private final Set<StreamObserver<ProbeResponse>> parked = new LinkedHashSet<>(); // guarded by hangLock

  Script(LongSupplier ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  long now() {
    return ticker.getAsLong();
  }

  // ---- readiness ----------------------------------------------------------------------------

  void setReady(boolean ready) {
    readiness = ready ? Readiness.READY : Readiness.NOT_READY;
  }

  void readyAfter(Duration delay) {
    long nanos = Bounds.notNegative(delay, "readyAfter").toNanos();
    readiness = nanos == 0 ? Readiness.READY : new Readiness(Readiness.Kind.AFTER, now() + nanos);
  }

  void flap(Duration period) {
    long nanos = Bounds.positive(period, "flap period").toNanos();
    flap = new Flap(now(), nanos);
  }

  void stopFlapping() {
    flap = null;
  }

  boolean isReadyNow() {
    long now = now();
    Flap f = flap;
    return f != null ? f.isReady(now) : readiness.isReady(now);
  }

  /** Answer ready probes without the {@code ready} field (CSI: absent means ready). */
  void setOmitReady(boolean omit) {
    omitReady = omit;
  }

  boolean omitReady() {
    return omitReady;
  }

  /** Probes hang once the plugin has answered ready for {@code after}; null turns it off. */
  void hangAfterReady(Duration after) {
    if (after == null) {
      hangAfterReadyNanos = -1;
      return;
    }
    hangAfterReadyNanos = Bounds.notNegative(after, "hangAfterReady").toNanos();
    seenReady = false;
  }

  /**
   * Called for each probe before it is answered: starts hanging once the plugin has been
   * ready for the scripted time (from the first probe that found it ready).
   */
  void beforeProbe() {
    long after = hangAfterReadyNanos;
    if (after < 0 || !isReadyNow()) {
      return;
    }
    long now = now();
    if (!seenReady) {
      seenReady = true;
      firstReadyNanos = now;
    }
    if (now - firstReadyNanos >= after) {
      hangAfterReadyNanos = -1;
      hangProbes(true);
    }
  }

  // ---- probe faults -------------------------------------------------------------------------

  void failProbes(Status.Code code, String message) {
    Objects.requireNonNull(code, "code");
    if (code == Status.Code.OK) {
      throw new IllegalArgumentException("failProbes code must not be OK: " + code);
    }
    probeFailure = Status.fromCode(code).withDescription(message);
  }

  void clearProbeFailure() {
    probeFailure = null;
  }

  Status probeFailure() {
    return probeFailure;
  }

  void countProbe() {
    probeCount.increment();
  }

  long probeCount() {
    return probeCount.sum();
  }

  /**
   * Parks {@code observer} if probes hang; returns whether it was parked. A parked call is
   * forgotten when the client cancels it (deadline), so parked calls cannot pile up.
   */
  boolean parkIfHanging(StreamObserver<ProbeResponse> observer) {
    synchronized (hangLock) {
      if (!hang) {
        return false;
      }
      parked.add(observer);
    }
    if (observer instanceof ServerCallStreamObserver<ProbeResponse> serverObserver) {
      serverObserver.setOnCancelHandler(() -> {
        synchronized (hangLock) {
          parked.remove(observer);
        }
      });
    }
    return true;
  }

  /**
   * Sets whether probes hang. Returns the calls that were parked and must now be answered
   * (empty unless hanging was switched off).
   */
  List<StreamObserver<ProbeResponse>> hangProbes(boolean hangs) {
    synchronized (hangLock) {
      hang = hangs;
      if (hangs) {
        return List.of();
      }
      return drainParkedLocked();
    }
  }

  /** Stops hanging and hands back every parked call; used when the plugin stops. */
  List<StreamObserver<ProbeResponse>> releaseAllParked() {
    synchronized (hangLock) {
      return drainParkedLocked();
    }
  }

  private List<StreamObserver<ProbeResponse>> drainParkedLocked() {
    List<StreamObserver<ProbeResponse>> drained = new ArrayList<>(parked);
    parked.clear();
    return drained;
  }

  int parkedCount() {
    synchronized (hangLock) {
      return parked.size();
    }
  }

  // ---- latency ------------------------------------------------------------------------------

  void setLatency(Duration latency) {
    latencyNanos = Bounds.notNegative(latency, "latency").toNanos();
  }

  long latencyNanos() {
    return latencyNanos;
  }

  // ---- identity and capabilities --------------------------------------------------------------

  GetPluginInfoResponse pluginInfo() {
    return pluginInfo;
  }

  /** Read-modify-write of the plugin info; synchronized so two concurrent edits both land. */
  synchronized void updatePluginInfo(UnaryOperator<GetPluginInfoResponse.Builder> edit) {
    GetPluginInfoResponse current =
        pluginInfo == null ? GetPluginInfoResponse.getDefaultInstance() : pluginInfo;
    pluginInfo = edit.apply(current.toBuilder()).build();
  }

  List<PluginCapability> pluginCapabilities() {
    return pluginCapabilities;
  }

  void setPluginCapabilities(List<PluginCapability> caps) {
    pluginCapabilities = List.copyOf(caps);
  }

  List<ControllerServiceCapability> controllerCapabilities() {
    return controllerCapabilities;
  }

  void setControllerCapabilities(List<ControllerServiceCapability> caps) {
    controllerCapabilities = List.copyOf(caps);
  }

  List<NodeServiceCapability> nodeCapabilities() {
    return nodeCapabilities;
  }

  void setNodeCapabilities(List<NodeServiceCapability> caps) {
    nodeCapabilities = List.copyOf(caps);
  }

  /** Whether the node capabilities advertised now include the RPC capability {@code type}. */
  boolean hasNodeCapability(NodeServiceCapability.RPC.Type type) {
    for (NodeServiceCapability c : nodeCapabilities) {
      if (c.hasRpc() && c.getRpc().getTypeValue() == type.getNumber()) {
        return true;
      }
    }
    return false;
  }

  NodeGetInfoResponse nodeInfo() {
    return nodeInfo;
  }

  void setNodeInfo(NodeGetInfoResponse info) {
    nodeInfo = Objects.requireNonNull(info, "nodeInfo");
  }
}
