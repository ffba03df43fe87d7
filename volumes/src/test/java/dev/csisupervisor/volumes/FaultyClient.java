package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerExpandResult;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A real {@link CsiClient} (to the mock plugin) with faults injected per RPC in front of it: the
 * next calls of an RPC fail with a status the test chose (the plugin is then not called), and
 * every call is counted and checked for a second call in flight on the same volume.
 */
final class FaultyClient extends ForwardingCsiClient {
  private volatile CsiClient real;
  private final Map<String, Deque<StatusCode>> faults = new HashMap<>(); // guarded by this
  private final Map<String, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> inFlightPerVolume = new ConcurrentHashMap<>();
  private final AtomicInteger maxInFlightPerVolume = new AtomicInteger();
  private final List<String> log = new ArrayList<>(); // guarded by this
  volatile Consumer<String> beforeCall = rpc -> {};
  volatile VolumeStats.Condition condition;
  /** The table a successful stage or publish mounts into and an unstage or unpublish unmounts from. */
  private final FakeMountTable mounts;
  /** The plugin answers an unpublish or unstage done but leaves the mount (it lost its state). */
  volatile boolean leavesMounts;

  FaultyClient(CsiClient real, FakeMountTable mounts) {
    this.real = real;
    this.mounts = mounts;
  }

  private <T> CompletableFuture<T> mounting(CompletableFuture<T> call, Path path) {
    return call.thenApply(v -> {
      mounts.mount(path);
      return v;
    });
  }

  private <T> CompletableFuture<T> unmounting(CompletableFuture<T> call, Path path) {
    return call.thenApply(v -> {
      if (!leavesMounts) {
        mounts.pluginUnmounted(path);
      }
      return v;
    });
  }

  /** The next {@code times} calls of {@code rpc} fail with {@code code} without reaching the plugin. */
  synchronized void fail(String rpc, StatusCode code, int times) {
    Deque<StatusCode> q = faults.computeIfAbsent(rpc, k -> new ArrayDeque<>());
    for (int i = 0; i < times; i++) {
      q.add(code);
    }
  }

  synchronized void clearFaults() {
    faults.clear();
  }

  int calls(String rpc) {
    AtomicInteger n = calls.get(rpc);
    return n == null ? 0 : n.get();
  }

  synchronized List<String> log() {
    return List.copyOf(log);
  }

  int maxInFlightPerVolume() {
    return maxInFlightPerVolume.get();
  }

  private <T> CompletableFuture<T> call(String rpc, String volumeId, Supplier<CompletableFuture<T>> delegate) {
    calls.computeIfAbsent(rpc, k -> new AtomicInteger()).incrementAndGet();
    beforeCall.accept(rpc);
    StatusCode fault;
    synchronized (this) {
      log.add(rpc + " " + volumeId);
      Deque<StatusCode> q = faults.get(rpc);
      fault = q == null ? null : q.poll();
    }
    if (fault != null) {
      return CompletableFuture.failedFuture(new CsiStatusException(real.socket(), "csi.v1/" + rpc, fault,
          "injected " + fault + " for " + volumeId));
    }
    AtomicInteger inFlight = inFlightPerVolume.computeIfAbsent(volumeId, k -> new AtomicInteger());
    maxInFlightPerVolume.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
    CompletableFuture<T> f;
    try {
      f = delegate.get();
    } catch (RuntimeException e) {
      inFlight.decrementAndGet();
      throw e;
    }
    return f.whenComplete((v, e) -> inFlight.decrementAndGet());
  }

  @Override
  protected CsiClient delegate() {
    return real;
  }

  @Override
  public CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest r) {
    return call("NodeStageVolume", r.volumeId(), () -> mounting(real.nodeStageVolumeAsync(r), r.stagingPath()));
  }

  @Override
  public CompletableFuture<Void> nodeUnstageVolumeAsync(String v, Path p) {
    return call("NodeUnstageVolume", v, () -> unmounting(real.nodeUnstageVolumeAsync(v, p), p));
  }

  @Override
  public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest r) {
    return call("NodePublishVolume", r.volumeId(), () -> mounting(real.nodePublishVolumeAsync(r), r.targetPath()));
  }

  @Override
  public CompletableFuture<Void> nodeUnpublishVolumeAsync(String v, Path p) {
    return call("NodeUnpublishVolume", v, () -> unmounting(real.nodeUnpublishVolumeAsync(v, p), p));
  }

  @Override
  public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String v, Path p, Optional<Path> s) {
    VolumeStats.Condition c = condition;
    return call("NodeGetVolumeStats", v, () -> real.nodeGetVolumeStatsAsync(v, p, s)
        .thenApply(stats -> c == null ? stats : new VolumeStats(stats.usage(), Optional.of(c))));
  }

  @Override
  public CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest r) {
    return call("NodeExpandVolume", r.volumeId(), () -> real.nodeExpandVolumeAsync(r));
  }

  @Override
  public CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest r) {
    return call("CreateVolume", r.name(), () -> real.createVolumeAsync(r));
  }

  @Override
  public CompletableFuture<Void> deleteVolumeAsync(String v, Secrets s) {
    return call("DeleteVolume", v, () -> real.deleteVolumeAsync(v, s));
  }

  @Override
  public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(ControllerPublishRequest r) {
    return call("ControllerPublishVolume", r.volumeId(), () -> real.controllerPublishVolumeAsync(r));
  }

  @Override
  public CompletableFuture<Void> controllerUnpublishVolumeAsync(String v, String n, Secrets s) {
    return call("ControllerUnpublishVolume", v, () -> real.controllerUnpublishVolumeAsync(v, n, s));
  }

  @Override
  public CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String v, CapacityRange c,
      Optional<VolumeCapability> cap, Secrets s) {
    return call("ControllerExpandVolume", v, () -> real.controllerExpandVolumeAsync(v, c, cap, s));
  }

  /** Closes the real client; a manager that asks for this socket again gets {@link #reopened()}. */
  @Override
  public synchronized void close() {
    if (real != null) {
      real.close();
      closed = true;
    }
  }

  private boolean closed; // guarded by this

  /** This client with a fresh real client if it was closed (counts and faults carry over). */
  synchronized FaultyClient reopened() {
    if (closed) {
      try {
        real = CsiClient.create(real.socket());
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      closed = false;
    }
    return this;
  }
}
