package dev.csisupervisor.agent;

import dev.csisupervisor.agent.cluster.ClusterController;
import dev.csisupervisor.agent.cluster.ClusterMembership;
import dev.csisupervisor.agent.cluster.ClusterNode;
import dev.csisupervisor.agent.cluster.ClusterVolumeClaims;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.metrics.VolumeStatsCache;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.volumes.MountTable;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's volumes: the volume manager, which keeps its records in the registry's store, its cluster claims, its
 * metrics, and the cluster's volumes as last read (for the STUCK metric and the operator page). Built in the agent's
 * step 1 ({@link #start}), its cluster metrics once the membership is there ({@link #watchCluster}); closed before
 * any plugin stops, so that a volume operation in flight stays recorded for the next start instead of being retried
 * against plugins that are going away (mounts stay mounted). Used by the agent's start and close, which do not
 * overlap.
 */
final class AgentVolumes implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(AgentVolumes.class);
  /** How often the cluster's volumes are read for the STUCK metric and the operator page's banner. */
  static final Duration CLUSTER_READ_INTERVAL = Duration.ofSeconds(10);

  private final AgentMetrics metrics;
  private final VolumeMetrics volumeMetrics;
  private final ClusterVolumeClaims clusterClaims;
  private final VolumeManager volumes;
  private final ClusterReads clusterReads;
  private ScheduledFuture<?> clusterRefresh;

  private AgentVolumes(AgentMetrics metrics, VolumeMetrics volumeMetrics, ClusterVolumeClaims clusterClaims,
      VolumeManager volumes, ClusterReads clusterReads) {
    this.metrics = metrics;
    this.volumeMetrics = volumeMetrics;
    this.clusterClaims = clusterClaims;
    this.volumes = volumes;
    this.clusterReads = clusterReads;
  }

  /**
   * The volume manager over {@code store}, settling what a crash interrupted as soon as each volume's node plugin is
   * registered and confirmed again. In a cluster ({@code cluster:} in the config, now or after a reload) every mount
   * takes its claim in etcd first, and the controller publish is the elected controller agent's; claims no record
   * holds are released every 30 s.
   *
   * @param records the volume records, as the store read them at open
   * @param cluster the agent's cluster membership (none before it is made, or without a cluster)
   */
  static AgentVolumes start(AgentConfig config, Clock clock, AgentThreads threads, PluginRegistry registry,
      StateStore store, Map<String, byte[]> records, AgentMetrics metrics, OperatorView operatorView,
      Supplier<Optional<ClusterMembership>> cluster) {
    Supplier<Optional<ClusterNode>> node = () -> cluster.get().flatMap(ClusterMembership::node);
    VolumeMetrics volumeMetrics = new VolumeMetrics(metrics, registry, clock);
    ClusterVolumeClaims clusterClaims = new ClusterVolumeClaims(() -> node.get()
        .map(n -> new ClusterVolumeClaims.Membership(n.volumes(), n.config().nodeId(), n::status)), registry,
        threads.scheduler, config.volumeMountWait(), Duration.ofSeconds(30));
    VolumeManager volumes;
    try {
      volumes = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(config.csiRoot())
          .clusterClaims(new ObservedClaims(clusterClaims, operatorView::claimRefused))
          .scheduler(threads.scheduler).clock(clock, System::nanoTime).clientFactory(volumeMetrics::client)
          .mountWait(config.volumeMountWait()).healthInterval(config.volumeHealthInterval())
          .mountTable(config.volumeVerifyMounts() ? Optional.of(MountTable.proc()) : Optional.empty())
          .records(records)
          // A count per event, from the first one (a restart's LOST and PENDING too): the listeners do nothing
          // that blocks, so they run where the event is emitted.
          .listener(e -> {
            metrics.volumeEvent(e.kind().name());
            operatorView.volumeEvent(e);
          }, Runnable::run)
          .listener(volumeMetrics.pendingListener(), Runnable::run)
          .build();
    } catch (RuntimeException e) {
      clusterClaims.close(); // the agent's close would not reach it: nothing holds it yet
      throw e;
    }
    clusterClaims.bind(volumes);
    AgentVolumes v = new AgentVolumes(metrics, volumeMetrics, clusterClaims, volumes, new ClusterReads(node, clock));
    if (!config.volumeVerifyMounts()) {
      log.warn("volumes.verify_mounts is false: volume mounts are not checked against the mount table (lost"
          + " mounts are not mounted again, unmounts not verified, orphan mounts not found); only for plugins"
          + " that mount nothing, such as the mock plugin");
    }
    volumeMetrics.watch(volumes);
    return v;
  }

  /** The volume families that read the manager at each scrape. */
  void watchVolumes() {
    metrics.watchVolumes(() -> volumeCounts(volumes), () -> volumes.abnormal().size(),
        () -> volumes.list().stream().filter(VolumeRecord::hasLost).count());
  }

  /** The cluster volume families: what the controller agent did, releases pending, what is STUCK. */
  void watchCluster(Supplier<Optional<ClusterNode>> node) {
    Function<ToLongFunction<ClusterController.Counts>, LongSupplier> counts =
        f -> () -> node.get().map(n -> f.applyAsLong(n.controller().counts())).orElse(0L);
    metrics.watchClusterVolumes(() -> node.get().map(n -> (long) n.controller().leading().size()).orElse(0L),
        counts.apply(ClusterController.Counts::publishes), counts.apply(ClusterController.Counts::unpublishes),
        counts.apply(ClusterController.Counts::fenced), counts.apply(ClusterController.Counts::creates),
        counts.apply(ClusterController.Counts::deletes), clusterClaims::pendingReleases);
    metrics.watchClusterStuck(clusterReads::stuckCounts);
    Function<ToLongFunction<ClusterController.CheckCounts>, LongSupplier> checks = f -> () -> node.get()
        .flatMap(n -> n.controller().checkCounts()).map(f::applyAsLong).orElse(0L);
    metrics.watchClusterChecks(checks.apply(ClusterController.CheckCounts::rounds),
        checks.apply(ClusterController.CheckCounts::republished),
        checks.apply(ClusterController.CheckCounts::unrecordedPublications));
  }

  /** Reads the cluster's volumes now and every {@link #CLUSTER_READ_INTERVAL}, off the scheduler (etcd may be slow). */
  void startClusterReads(AgentThreads threads) {
    clusterRefresh = threads.scheduler.scheduleWithFixedDelay(() -> {
      try {
        threads.io.execute(clusterReads::refresh);
      } catch (RejectedExecutionException e) {
        // stopping
      }
    }, 0, CLUSTER_READ_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
  }

  VolumeManager manager() {
    return volumes;
  }

  /** The cluster's volumes as last read (none without a cluster). */
  ClusterReads clusterReads() {
    return clusterReads;
  }

  /** The last NodeGetVolumeStats answer of each volume on this node. */
  Map<VolumeStatsCache.Key, VolumeStats> stats() {
    return volumeMetrics.stats(volumes);
  }

  /** The volumes with work pending now, each with since when it waits. */
  SortedMap<String, Instant> pendingSince() {
    return volumeMetrics.pendingSince(volumes);
  }

  private static Map<String, Long> volumeCounts(VolumeManager volumes) {
    long pending = volumes.pending().size();
    // A record that only owes a node expansion is no volume on this node.
    long onNode = volumes.list().stream().filter(VolumeRecord::onNode).count();
    return Map.of("mounted", onNode - pending, "pending", pending);
  }

  /** Stops the cluster reads; closes the manager (mounts stay mounted) and then the cluster claims. */
  @Override
  public void close() {
    if (clusterRefresh != null) {
      clusterRefresh.cancel(false);
    }
    Agent.closeQuietly(volumes);
    Agent.closeQuietly(clusterClaims);
  }
}
