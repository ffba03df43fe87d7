package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.agent.cluster.LeaderCalls.CallFailed;
import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's periodic look at each plugin id it leads (README "Cluster volumes", health and capacity),
 * on its own single thread, so that a slow plugin never holds attaches or creates back. Each round, per led plugin
 * id with a healthy controller, the records are read first (what is recorded then, the plugin has by then), then:
 * <ol>
 *   <li><b>Health</b> ({@link ControllerHealthCheck}): conditions (ABNORMAL, MISSING), leaks, publications the plugin
 *       lost (sent again) or that no attachment records, snapshots.</li>
 *   <li><b>Capacity</b> ({@link CapacityCheck}), with {@code GET_CAPACITY}; also soon after the count of its volumes
 *       changes ({@link #volumesSeen}) or when asked ({@link #capacitySoon}).</li>
 * </ol>
 * What is known of each plugin id in the current election term ({@link PluginTerm}) keeps a round from writing
 * what did not change: with nothing changed a round makes no etcd write, and each write is conditional on the
 * election. A failing plugin call skips that plugin id for the interval (counted, logged). Thread-safe.
 */
final class ControllerChecks implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ControllerChecks.class);
  /** How soon after a change of the volume count capacity is read again. */
  static final Duration CAPACITY_SOON = Duration.ofSeconds(1);

  private final ClusterVolumes volumes;
  private final PluginRegistry registry;
  private final Supplier<Map<String, ClusterVolumes.Leadership>> leading;
  private final BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients;
  private final ControllerHealthCheck health;
  private final CapacityCheck capacity;
  private final ControllerCounts counts;
  private final ScheduledExecutorService thread;
  /** Per plugin id, what this agent wrote or read in the current election term. */
  private final Map<String, PluginTerm> terms = new ConcurrentHashMap<>();
  /** Per plugin id, the count of its volumes the last round saw. */
  private final Map<String, Integer> volumeCounts = new ConcurrentHashMap<>();
  /** Plugin ids whose capacity read is queued. */
  private final Set<String> capacityQueued = ConcurrentHashMap.newKeySet();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong writes = new AtomicLong();

  /** What one check of all led plugin ids did. */
  record Result(int plugins, int writes, int failed) {}

  /** Counts for status and metrics. */
  record Counts(long rounds, long writes, long republished, int unrecordedPublications) {}

  ControllerChecks(ClusterVolumes volumes, PluginRegistry registry,
      Supplier<Map<String, ClusterVolumes.Leadership>> leading,
      BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients, LeaderCalls calls, VolumeAttacher attacher,
      ControllerCounts counts, Clock clock, String nodeId) {
    this.volumes = Objects.requireNonNull(volumes, "volumes");
    this.registry = Objects.requireNonNull(registry, "registry");
    this.leading = Objects.requireNonNull(leading, "leading");
    this.clients = Objects.requireNonNull(clients, "clients");
    Objects.requireNonNull(calls, "calls");
    Objects.requireNonNull(clock, "clock");
    this.health = new ControllerHealthCheck(volumes, calls, Objects.requireNonNull(attacher, "attacher"), clock);
    this.capacity = new CapacityCheck(volumes, calls, clock);
    this.counts = Objects.requireNonNull(counts, "counts");
    this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "cluster-checks-" + nodeId);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A check of every led plugin id every {@code every} (the first after one interval: the rounds elect first).
   *
   * @throws IllegalArgumentException if {@code every} is not positive
   */
  ControllerChecks start(Duration every) {
    dev.csisupervisor.common.Bounds.positive(every, "every");
    thread.scheduleWithFixedDelay(() -> runQuietly(null), every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    return this;
  }

  /** A check of every led plugin id now, on the checks' thread; the future completes when it is done. */
  CompletableFuture<Result> checkNow() {
    return CompletableFuture.supplyAsync(() -> runQuietly(null), thread);
  }

  /** Capacity of the plugin id read again soon (after a create or delete), on the checks' thread. */
  void capacitySoon(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    if (!capacityQueued.add(pluginId)) {
      return;
    }
    try {
      thread.schedule(() -> {
        capacityQueued.remove(pluginId);
        runQuietly(pluginId);
      }, CAPACITY_SOON.toMillis(), TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      capacityQueued.remove(pluginId);
    }
  }

  /**
   * From a controller round: the plugin id's volumes as the round read them. A change of their count (a create or
   * delete done, a register) reads capacity again soon. Cheap; returns at once.
   */
  void volumesSeen(String pluginId, VolumesSnapshot s) {
    int n = (int) s.volumes().stream().filter(v -> v.pluginId().equals(pluginId)).count();
    Integer before = volumeCounts.put(pluginId, n);
    if (before != null && before != n) {
      capacitySoon(pluginId);
    }
  }

  Counts counts() {
    return new Counts(rounds.get(), writes.get(), health.republished(), health.unrecordedPublications());
  }

  /** @param capacityOnly a plugin id to read only the capacity of; null: every led plugin id, health and capacity */
  private Result runQuietly(String capacityOnly) {
    int plugins = 0;
    int written = 0;
    int failed = 0;
    Map<String, ClusterVolumes.Leadership> led = leading.get();
    terms.keySet().retainAll(led.keySet());
    for (Map.Entry<String, ClusterVolumes.Leadership> e : new TreeMap<>(led).entrySet()) {
      String plugin = e.getKey();
      if (capacityOnly != null && !capacityOnly.equals(plugin)) {
        continue;
      }
      Optional<PluginInfo> controller = registry.list(PluginType.CSI_CONTROLLER).stream()
          .filter(p -> p.name().equals(plugin) && p.health().healthy()).findFirst();
      if (controller.isEmpty()) {
        continue;
      }
      plugins++;
      try {
        written += check(e.getValue(), controller.get(), capacityOnly != null);
      } catch (CallFailed x) {
        failed++;
        String said = "check of plugin " + plugin + ": " + x.getMessage();
        counts.error(said);
        log.warn("cluster controller: {} (skipped until the next interval)", said);
      } catch (NotLeading x) {
        terms.remove(plugin);
      } catch (EtcdException x) {
        failed++;
        terms.remove(plugin); // read again from etcd next time: a write may or may not have been made
        counts.error("check of plugin " + plugin + ": " + x.getMessage());
        log.debug("cluster controller: check of plugin {} deferred: {}", plugin, x.getMessage());
      } catch (RuntimeException x) {
        failed++;
        terms.remove(plugin);
        counts.error("check of plugin " + plugin + ": " + x);
        log.warn("cluster controller: check of plugin {} failed", plugin, x);
      }
    }
    if (capacityOnly == null) {
      rounds.incrementAndGet();
    }
    writes.addAndGet(written);
    return new Result(plugins, written, failed);
  }

  /** One plugin id: health (unless {@code capacityOnly}), then capacity. @return keys written */
  private int check(ClusterVolumes.Leadership l, PluginInfo controller, boolean capacityOnly)
      throws NotLeading, CallFailed {
    String plugin = controller.name();
    PluginTerm term = terms.get(plugin);
    if (term == null || !term.leadership.equals(l)) {
      term = new PluginTerm(l, volumes, plugin);
      terms.put(plugin, term);
    }
    CsiClient client = clients.apply(l, controller);
    Set<String> caps = controller.fingerprint().controllerCapabilities();
    // Step 1: the records, read before the plugin is asked (what is recorded then, the plugin has by then).
    VolumesSnapshot s = volumes.read();
    int written = 0;
    if (!capacityOnly) {
      written += health.check(term, controller, client, caps, s);
    }
    if (caps.contains("GET_CAPACITY")) {
      written += capacity.check(term, controller, client, s);
    }
    return written;
  }

  @Override
  public void close() {
    thread.shutdownNow();
    try {
      thread.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
