package dev.csisupervisor.agent.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.VolumeStats;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** What a caller of a volume call through {@link ObservedCsiClient} sees when its answer arrives. */
class ObservedCsiClientTest {
  private final CompletableFuture<VolumeStats> plugin = new CompletableFuture<>();
  private final AgentMetrics metrics = new AgentMetrics();
  private final VolumeStatsCache stats = new VolumeStatsCache();
  private final ObservedCsiClient client = new ObservedCsiClient(new ForwardingCsiClient() {
    @Override
    protected CsiClient delegate() {
      throw new UnsupportedOperationException("only NodeGetVolumeStats here");
    }

    @Override
    public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String volumeId, Path volumePath,
        Optional<Path> stagingPath) {
      return plugin;
    }
  }, "ebs", metrics, stats, () -> 0L);

  @Test
  void theCaller_seesTheAnswersMetricsAndStats_whenItsAnswerArrives() {
    AtomicReference<String> seen = new AtomicReference<>();
    client.nodeGetVolumeStatsAsync("vol-1", Path.of("/target"), Optional.empty()).thenRun(() -> seen.set(
        stats.current(Set.of(new VolumeStatsCache.Key("ebs", "vol-1"))).size() + " stats; " + rpcLine()));
    VolumeStats answer = new VolumeStats(List.of(), Optional.empty());
    plugin.complete(answer); // the answer arrives: the caller's dependent runs on this thread
    assertEquals("1 stats; csi_agent_volume_rpcs_total{code=\"OK\",plugin=\"ebs\",rpc=\"NodeGetVolumeStats\"} 1.0",
        seen.get());
  }

  @Test
  void cancellingTheAnswer_cancelsTheCall() {
    client.nodeGetVolumeStatsAsync("vol-1", Path.of("/target"), Optional.empty()).cancel(true);
    assertTrue(plugin.isCancelled(), "the plugin's call is cancelled too");
    // Counted once, as a failure the client did not name (a cancellation is no CSI status).
    assertEquals("csi_agent_volume_rpcs_total{code=\"UNKNOWN\",plugin=\"ebs\",rpc=\"NodeGetVolumeStats\"} 1.0",
        rpcLine());
  }

  private String rpcLine() {
    return metrics.scrape().lines().filter(l -> l.startsWith("csi_agent_volume_rpcs_total{")).findFirst()
        .orElse("no csi_agent_volume_rpcs_total line");
  }
}
