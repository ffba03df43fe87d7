package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerExpandResult;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A plugin's {@link CsiClient} that tells the agent's metrics of every CSI volume call made through it, with the
 * plugin id: {@code csi_agent_volume_rpcs_total{rpc,code,plugin}}, {@code csi_agent_volume_rpc_seconds{rpc,plugin}},
 * and each NodeGetVolumeStats answer for {@code csi_agent_volume_stats_*}. The code is the volume manager's word for
 * the result: {@code OK}, the plugin's status code, the client's failure kind, or {@code UNKNOWN}. Identity calls
 * (probe, capabilities, node info) are forwarded uncounted: the supervisor has their metrics. Thread-safe as
 * the client it wraps.
 */
public final class ObservedCsiClient extends ForwardingCsiClient {
  private final CsiClient client;
  private final String plugin;
  private final AgentMetrics metrics;
  private final VolumeStatsCache stats;
  private final LongSupplier nanoTime;

  public ObservedCsiClient(CsiClient client, String plugin, AgentMetrics metrics, VolumeStatsCache stats,
      LongSupplier nanoTime) {
    this.client = requireNonNull(client, "client");
    this.plugin = requireNonNull(plugin, "plugin");
    this.metrics = requireNonNull(metrics, "metrics");
    this.stats = requireNonNull(stats, "stats");
    this.nanoTime = requireNonNull(nanoTime, "nanoTime");
  }

  /** The code a failed call is counted with, as the volume manager names it in its messages. */
  static String code(Throwable failure) {
    if (failure == null) {
      return "OK";
    }
    CsiException csi = CsiException.find(failure).orElse(null);
    if (csi == null) {
      return "UNKNOWN";
    }
    return csi instanceof CsiStatusException s ? s.code().name() : csi.kind().name();
  }

  @Override
  protected CsiClient delegate() {
    return client;
  }

  private <T> CompletableFuture<T> observed(String rpc, Supplier<CompletableFuture<T>> call) {
    return observed(rpc, call, v -> { });
  }

  /**
   * The call's answer, completed only once its metrics (and {@code onAnswer}) have it: whoever waits for the call
   * then reads them as of that answer. A dependent of the call's own future would run after the caller's (they run
   * last registered first). Cancelling the answer cancels the call.
   */
  private <T> CompletableFuture<T> observed(String rpc, Supplier<CompletableFuture<T>> call, Consumer<T> onAnswer) {
    long start = nanoTime.getAsLong();
    CompletableFuture<T> f = call.get();
    CompletableFuture<T> answer = new CompletableFuture<>();
    f.whenComplete((v, failure) -> {
      try {
        metrics.volumeRpc(plugin, rpc, code(failure), Duration.ofNanos(nanoTime.getAsLong() - start));
        if (failure == null) {
          onAnswer.accept(v);
        }
      } finally {
        if (failure == null) {
          answer.complete(v);
        } else {
          answer.completeExceptionally(failure);
        }
      }
    });
    answer.whenComplete((v, failure) -> {
      if (failure instanceof CancellationException) {
        f.cancel(true);
      }
    });
    return answer;
  }

  @Override
  public CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest request) {
    return observed("NodeStageVolume", () -> client.nodeStageVolumeAsync(request));
  }

  @Override
  public CompletableFuture<Void> nodeUnstageVolumeAsync(String volumeId, Path stagingPath) {
    return observed("NodeUnstageVolume", () -> client.nodeUnstageVolumeAsync(volumeId, stagingPath));
  }

  @Override
  public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest request) {
    return observed("NodePublishVolume", () -> client.nodePublishVolumeAsync(request));
  }

  @Override
  public CompletableFuture<Void> nodeUnpublishVolumeAsync(String volumeId, Path targetPath) {
    return observed("NodeUnpublishVolume", () -> client.nodeUnpublishVolumeAsync(volumeId, targetPath));
  }

  @Override
  public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String volumeId, Path volumePath,
      Optional<Path> stagingPath) {
    return observed("NodeGetVolumeStats", () -> client.nodeGetVolumeStatsAsync(volumeId, volumePath, stagingPath),
        s -> stats.record(plugin, volumeId, s));
  }

  @Override
  public CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest request) {
    return observed("NodeExpandVolume", () -> client.nodeExpandVolumeAsync(request));
  }

  @Override
  public CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest request) {
    return observed("CreateVolume", () -> client.createVolumeAsync(request));
  }

  @Override
  public CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets) {
    return observed("DeleteVolume", () -> client.deleteVolumeAsync(volumeId, secrets));
  }

  @Override
  public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(ControllerPublishRequest request) {
    return observed("ControllerPublishVolume", () -> client.controllerPublishVolumeAsync(request));
  }

  @Override
  public CompletableFuture<Void> controllerUnpublishVolumeAsync(String volumeId, String nodeId, Secrets secrets) {
    return observed("ControllerUnpublishVolume", () -> client.controllerUnpublishVolumeAsync(volumeId, nodeId,
        secrets));
  }

  @Override
  public CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String volumeId,
      CapacityRange capacityRange, Optional<VolumeCapability> capability, Secrets secrets) {
    return observed("ControllerExpandVolume", () -> client.controllerExpandVolumeAsync(volumeId, capacityRange,
        capability, secrets));
  }


}
