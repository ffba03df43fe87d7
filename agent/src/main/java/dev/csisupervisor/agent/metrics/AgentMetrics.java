package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.resources.ResourceSample;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import dev.csisupervisor.client.VolumeStats;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;

/**
 * The agent's Prometheus metrics, in a registry of its own (not the global default one, so that
 * several agents in one JVM, as in tests, do not collide).
 *
 * <ul>
 *   <li>{@code csi_agent_plugins{type,healthy}} — registered plugin instances, read from the
 *       registry at scrape time</li>
 *   <li>{@code csi_agent_registry_events_total{type,kind}} — registrations, updates and
 *       deregistrations</li>
 *   <li>{@code csi_agent_health_transitions_total{plugin,to}} — healthy/unhealthy transitions
 *       reported by the supervisor</li>
 *   <li>{@code csi_agent_plugin_restarts_total{plugin}} — process restarts by the agent</li>
 *   <li>{@code csi_agent_state_commit_seconds{op}} — state store commit latency</li>
 *   <li>{@code csi_agent_admin_watchers} and {@code csi_agent_admin_watch_backlog} — admin event
 *       streams and the events queued for them</li>
 *   <li>{@code csi_agent_artifact_downloads_total{plugin}} and
 *       {@code csi_agent_artifact_failures_total{plugin,reason}} — artifact revisions installed,
 *       and artifacts that could not be made ready (checksum, http, timeout, io, archive,
 *       entry_missing, entry_not_executable)</li>
 *   <li>{@code csi_agent_plugin_cpu_percent{plugin}} and
 *       {@code csi_agent_plugin_memory_bytes{plugin}} — the latest resource sample of each
 *       running launched plugin (its process tree)</li>
 *   <li>{@code csi_agent_resource_limit_restarts_total{plugin,resource}} — restarts of plugins
 *       that stayed over a limit</li>
 *   <li>{@code csi_agent_discovered_sockets{state}} — sockets of the discovery directory</li>
 *   <li>{@code csi_agent_plugin_healthy{plugin,type}} — 1 if the newest registered instance of the plugin id
 *       answers its probes, else 0 (an alert can name the plugin)</li>
 *   <li>{@code csi_agent_volume_rpcs_total{rpc,code,plugin}} and {@code csi_agent_volume_rpc_seconds{rpc,plugin}}
 *       — CSI volume calls of the volume manager, by result, and their latency</li>
 *   <li>{@code csi_agent_volume_stats_{capacity,available,used}_bytes{plugin,volume}} and
 *       {@code csi_agent_volume_stats_inodes{,_free,_used}{plugin,volume}} — the last NodeGetVolumeStats answer of
 *       each volume published on this node (the kubelet's {@code kubelet_volume_stats_*} shape)</li>
 *   <li>{@code csi_agent_volume_pending_oldest_seconds} — how long the oldest volume with work pending has been
 *       pending</li>
 *   <li>{@code csi_agent_build_info{version}} — 1, with the agent's version; and the JVM's and the process'
 *       standard families ({@code jvm_*}, {@code process_*}) from client_java's instrumentation</li>
 *   <li>{@code csi_agent_volume_events_total{kind}} — the volume manager's events (MOUNTED, UNMOUNTED,
 *       MOUNT_FAILED, ROLLED_BACK, PENDING, LOST, REMOUNTED, UNCERTAIN, ABNORMAL, NORMAL)</li>
 *   <li>{@code csi_agent_volumes{state}}, {@code csi_agent_volumes_abnormal} and
 *       {@code csi_agent_volumes_lost} — volumes by state, volumes reported abnormal, volumes with a mount
 *       the mount table lost (being mounted again)</li>
 * </ul>
 *
 * <p>Thread-safe.
 */
public final class AgentMetrics implements AutoCloseable {
  private final PrometheusRegistry prometheus = new PrometheusRegistry();
  private final Counter registryEvents;
  private final Counter healthTransitions;
  private final Counter restarts;
  private final Histogram commitSeconds;
  private final Histogram probeSeconds;
  private final Counter probeFailures;
  private final Counter artifactDownloads;
  private final Counter artifactFailures;
  private final Counter limitRestarts;
  private final Counter volumeRpcs;
  private final Counter volumeEvents;
  private final Histogram volumeRpcSeconds;
  private final MetricFamilies make = new MetricFamilies(prometheus);
  private final ClusterMetricFamilies cluster = new ClusterMetricFamilies(make);
  private final AtomicReference<MetricsHttpServer> server = new AtomicReference<>();

  public AgentMetrics() {
    registryEvents = make.counter("csi_agent_registry_events_total",
        "Plugin registry events: REGISTERED, UPDATED, DEREGISTERED", "type", "kind");
    healthTransitions = make.counter("csi_agent_health_transitions_total",
        "Plugin health transitions seen by the supervisor", "plugin", "to");
    restarts = make.counter("csi_agent_plugin_restarts_total",
        "Plugin process restarts by the agent", "plugin");
    commitSeconds = make.histogram("csi_agent_state_commit_seconds",
        "Latency of state store commits", "op",
        0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1);
    probeSeconds = make.histogram("csi_agent_probe_seconds",
        "Latency of CSI Identity.Probe calls made by the supervisor", "plugin",
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5);
    probeFailures = make.counter("csi_agent_probe_failures_total",
        "Probes that got no answer (refused, deadline, error status, ...)", "plugin");
    artifactDownloads = make.counter("csi_agent_artifact_downloads_total",
        "Plugin artifact revisions downloaded, verified and installed", "plugin");
    artifactFailures = make.counter("csi_agent_artifact_failures_total",
        "Plugin artifacts that could not be made ready, by reason", "plugin", "reason");
    limitRestarts = make.counter("csi_agent_resource_limit_restarts_total",
        "Plugin restarts because the plugin stayed over a resource limit", "plugin", "resource");
    volumeRpcs = make.counter("csi_agent_volume_rpcs_total",
        "CSI volume calls made by the volume manager, by RPC and result (OK, the plugin's code, or the"
            + " client's failure kind), and plugin id", "rpc", "code", "plugin");
    volumeEvents = make.counter("csi_agent_volume_events_total",
        "Volume manager events by kind (MOUNTED, UNMOUNTED, MOUNT_FAILED, ROLLED_BACK, PENDING, LOST, REMOUNTED,"
            + " UNCERTAIN, ABNORMAL, NORMAL)", "kind");
    volumeRpcSeconds = Histogram.builder().name("csi_agent_volume_rpc_seconds")
        .help("Latency of CSI volume calls made by the volume manager").labelNames("rpc", "plugin").classicOnly()
        .classicUpperBounds(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120).register(prometheus);
    JvmMetrics.builder().register(prometheus);
  }

  /** Reports {@code csi_agent_build_info{version} 1}. */
  public void buildInfo(String version) {
    requireNonNull(version, "version");
    // An info metric: exposed as csi_agent_build_info{version="..."} 1.
    io.prometheus.metrics.core.metrics.Info.builder().name("csi_agent_build").help("The agent's version")
        .labelNames("version").register(prometheus).setLabelValues(version);
  }

  /**
   * Records one CSI volume call of the volume manager, with the plugin id it went to.
   *
   * @param plugin the plugin id
   * @param rpc the CSI RPC ({@code NodeStageVolume})
   * @param code {@code OK}, the plugin's status code, or the client's failure kind
   * @param latency how long the call took
   */
  public void volumeRpc(String plugin, String rpc, String code, java.time.Duration latency) {
    volumeRpcs.labelValues(rpc, code, plugin).inc();
    volumeRpcSeconds.labelValues(rpc, plugin).observe(latency.toNanos() / 1e9);
  }

  /**
   * Reports at each scrape the last NodeGetVolumeStats answer of each volume published on this node: bytes
   * (capacity, available, used) and inodes (total, free, used), each only where the plugin reported it.
   */
  public void watchVolumeStats(Supplier<Map<VolumeStatsCache.Key, VolumeStats>> stats) {
    requireNonNull(stats, "stats");
    record Family(String name, String what, VolumeStats.Unit unit, ToLongFunction<VolumeStats.Usage> field) {}
    for (Family f : List.of(
        new Family("capacity_bytes", "Capacity in bytes", VolumeStats.Unit.BYTES, VolumeStats.Usage::total),
        new Family("available_bytes", "Available bytes", VolumeStats.Unit.BYTES, VolumeStats.Usage::available),
        new Family("used_bytes", "Used bytes", VolumeStats.Unit.BYTES, VolumeStats.Usage::used),
        new Family("inodes", "Inodes", VolumeStats.Unit.INODES, VolumeStats.Usage::total),
        new Family("inodes_free", "Free inodes", VolumeStats.Unit.INODES, VolumeStats.Usage::available),
        new Family("inodes_used", "Used inodes", VolumeStats.Unit.INODES, VolumeStats.Usage::used))) {
      statsGauge("csi_agent_volume_stats_" + f.name(), f.what() + " of the volume (NodeGetVolumeStats)", stats,
          f.unit(), f.field());
    }
  }

  private void statsGauge(String name, String help, Supplier<Map<VolumeStatsCache.Key, VolumeStats>> stats,
      VolumeStats.Unit unit, ToLongFunction<VolumeStats.Usage> field) {
    GaugeWithCallback.builder().name(name).help(help).labelNames("plugin", "volume")
        .callback(cb -> stats.get().forEach((key, s) -> {
          for (VolumeStats.Usage u : s.usage()) {
            // CSI: 0 is "not reported" for each number; a volume with 0 bytes total is no volume to alert on.
            if (u.unit() == unit && (u.total() > 0 || field.applyAsLong(u) > 0)) {
              cb.call(field.applyAsLong(u), key.plugin(), key.volume());
            }
          }
        }))
        .register(prometheus);
  }

  /** Reports how long the oldest volume with work pending has been pending (0 if none), at each scrape. */
  public void watchPendingAge(DoubleSupplier oldestSeconds) {
    make.gaugeOf("csi_agent_volume_pending_oldest_seconds",
        "Seconds the oldest volume with work pending (an operation in flight, an unmount waiting for its plugin)"
            + " has been pending on this node; 0 if none", oldestSeconds);
  }

  /** Counts one event of the volume manager, by its kind ({@code MOUNTED}, {@code LOST}, ...). */
  public void volumeEvent(String kind) {
    volumeEvents.labelValues(kind).inc();
  }

  /**
   * Reports the volume manager's state at each scrape: volumes by state ({@code mounted}: every
   * operation final; {@code pending}: an operation in flight or waiting for its plugin), abnormal
   * volumes, volumes with a mount the mount table lost.
   */
  public void watchVolumes(Supplier<Map<String, Long>> byState, DoubleSupplier abnormal, DoubleSupplier lost) {
    requireNonNull(byState, "byState");
    make.gaugeByLabel("csi_agent_volumes", "Volumes this node has staged or published, by state (mounted, pending)",
        "state", byState);
    make.gaugeOf("csi_agent_volumes_abnormal", "Volumes whose plugin reports an abnormal condition", abnormal);
    make.gaugeOf("csi_agent_volumes_lost", "Volumes with a mount the mount table lost (a reboot, an unmount behind the"
        + " agent's back), being mounted again", lost);
  }

  public void artifactInstalled(String pluginId) {
    artifactDownloads.labelValues(pluginId).inc();
  }

  public void artifactFailure(String pluginId, String reason) {
    artifactFailures.labelValues(pluginId, reason).inc();
  }

  public void limitRestart(String pluginId, String resource) {
    limitRestarts.labelValues(pluginId, resource).inc();
  }

  /** Reports each running launched plugin's latest CPU and memory sample at each scrape. */
  public void watchResources(Supplier<Map<String, ResourceSample>> current) {
    requireNonNull(current, "current");
    GaugeWithCallback.builder()
        .name("csi_agent_plugin_cpu_percent")
        .help("CPU use of a launched plugin's process tree between the last two samples,"
            + " percent of one core")
        .labelNames("plugin")
        .callback(cb -> current.get().forEach((id, s) -> {
          if (s.cpuKnown()) {
            cb.call(s.cpuPercent(), id);
          }
        }))
        .register(prometheus);
    GaugeWithCallback.builder()
        .name("csi_agent_plugin_memory_bytes")
        .help("Resident memory of a launched plugin's process tree at the last sample")
        .labelNames("plugin")
        .callback(cb -> current.get().forEach((id, s) -> cb.call(s.memoryBytes(), id)))
        .register(prometheus);
  }

  /** Reports the discovery directory's sockets by state at each scrape. */
  public void watchDiscovery(Supplier<Map<String, Long>> byState) {
    requireNonNull(byState, "byState");
    make.gaugeByLabel("csi_agent_discovered_sockets",
        "Sockets in the discovery directory by state (classifying, retrying, supervised, ignored)", "state", byState);
  }

  /** Records one supervisor probe (a {@code ProbeObserver}). */
  public void probe(String pluginId, java.time.Duration latency, boolean ready, String error) {
    probeSeconds.labelValues(pluginId).observe(latency.toNanos() / 1e9);
    if (!error.isEmpty()) {
      probeFailures.labelValues(pluginId).inc();
    }
  }

  /** Reports the registry's content at each scrape. */
  public void watchRegistry(PluginRegistry registry) {
    requireNonNull(registry, "registry");
    GaugeWithCallback.builder()
        .name("csi_agent_plugins")
        .help("Registered plugin instances by type and health")
        .labelNames("type", "healthy")
        .callback(cb -> {
          for (PluginType type : PluginType.values()) {
            long healthy = 0;
            long unhealthy = 0;
            for (PluginInfo p : registry.listAll(type)) {
              if (p.health().healthy()) {
                healthy++;
              } else {
                unhealthy++;
              }
            }
            cb.call(healthy, type.label(), "true");
            cb.call(unhealthy, type.label(), "false");
          }
        })
        .register(prometheus);
    GaugeWithCallback.builder()
        .name("csi_agent_plugin_healthy")
        .help("1 if the newest registered instance of the plugin id answers its probes, else 0")
        .labelNames("plugin", "type")
        .callback(cb -> {
          for (PluginType type : PluginType.values()) {
            for (PluginInfo p : registry.list(type)) {
              cb.call(p.health().healthy() ? 1 : 0, p.name(), type.label());
            }
          }
        })
        .register(prometheus);
  }

  /** Reports the cluster catalog publisher's state at each scrape (issue 13). */
  public void watchCatalog(Supplier<dev.csisupervisor.catalog.PublisherStatus> status) {
    cluster.watchCatalog(status);
  }

  /**
   * Reports cluster volumes at each scrape: plugin ids this agent is the controller agent of, its controller
   * publishes, unpublishes and fenced claims, its creates and deletes, and this node's claim releases still waiting
   * for etcd.
   */
  public void watchClusterVolumes(LongSupplier leading, LongSupplier publishes, LongSupplier unpublishes,
      LongSupplier fenced, LongSupplier creates, LongSupplier deletes, LongSupplier pendingReleases) {
    cluster.watchClusterVolumes(leading, publishes, unpublishes, fenced, creates, deletes, pendingReleases);
  }

  /** Reports the controller agent's checks: rounds, attachments published again, unrecorded publications. */
  public void watchClusterChecks(LongSupplier rounds, LongSupplier republished, LongSupplier unrecordedPublications) {
    cluster.watchClusterChecks(rounds, republished, unrecordedPublications);
  }

  /** Reports the cluster's STUCK items by kind from the agent's last read of etcd; nothing without a cluster. */
  public void watchClusterStuck(Supplier<Map<String, Long>> byKind) {
    cluster.watchClusterStuck(byKind);
  }

  /** Reports the admin API's event streams at each scrape. */
  public void watchAdminStreams(LongSupplier watchers, LongSupplier backlog) {
    make.gaugeOf("csi_agent_admin_watchers", "Open admin WatchEvents streams", watchers::getAsLong);
    make.gaugeOf("csi_agent_admin_watch_backlog",
        "Events queued for admin WatchEvents streams, not yet sent", backlog::getAsLong);
  }

  public void registryEvent(PluginEvent event) {
    registryEvents.labelValues(event.type().label(), event.kind().name().toLowerCase(Locale.ROOT))
        .inc();
  }

  public void healthTransition(String pluginId, boolean healthy) {
    healthTransitions.labelValues(pluginId, healthy ? "healthy" : "unhealthy").inc();
  }

  public void restart(String pluginId) {
    restarts.labelValues(pluginId).inc();
  }

  /** Times one state store operation. */
  public <T> T timeCommit(String op, Supplier<T> commit) {
    long start = System.nanoTime();
    try {
      return commit.get();
    } finally {
      commitSeconds.labelValues(op).observe((System.nanoTime() - start) / 1e9);
    }
  }

  /**
   * Serves {@code /metrics} on {@code address} (port 0 picks a free port).
   *
   * @return the bound address
   * @throws IOException if it cannot bind, naming the address
   */
  public InetSocketAddress serve(InetSocketAddress address) throws IOException {
    return serve(address, null);
  }

  /**
   * Serves {@code /metrics} on {@code address}, and every other path with {@code pages} (the operator page and its
   * JSON; null: the client library's own page).
   */
  public InetSocketAddress serve(InetSocketAddress address, com.sun.net.httpserver.HttpHandler pages)
      throws IOException {
    MetricsHttpServer s = MetricsHttpServer.start(prometheus, address, pages);
    server.set(s);
    return s.bound();
  }

  /**
   * The names of every family registered, with or without samples now ({@code csi_agent_plugin_restarts}: a
   * counter's name without {@code _total}), sorted.
   */
  public java.util.SortedSet<String> families() {
    java.util.SortedSet<String> out = new java.util.TreeSet<>();
    prometheus.scrape().forEach(s -> out.add(s.getMetadata().getPrometheusName()));
    return out;
  }

  /** The current metrics in the Prometheus text format (what a scrape returns). */
  public String scrape() {
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      PrometheusTextFormatWriter.create().write(out, prometheus.scrape());
      return out.toString(StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }


  @Override
  public void close() {
    MetricsHttpServer s = server.getAndSet(null);
    if (s != null) {
      s.close();
    }
  }
}
