package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.admin.AdminServer;
import dev.csisupervisor.agent.admin.VolumeAdminService;
import dev.csisupervisor.agent.admin.AdminService;
import dev.csisupervisor.agent.cluster.ClusterMembership;
import dev.csisupervisor.agent.cluster.NodeInstance;
import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.agent.logging.AgentLogging;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.web.OperatorPages;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The csi-agent daemon: runs the configured CSI plugins as the node's task runner, supervises
 * them with a {@link CsiPluginSupervisor}, keeps them in a {@link PluginRegistry} persisted to
 * {@code <data_dir>/state/}, and serves the admin API and metrics.
 *
 * <p><b>Start.</b> The registry restores the registrations of the previous run. Launched plugin
 * processes that are still alive (recorded in {@code <data_dir>/processes.json}) are re-attached,
 * whatever {@code leave_running} said, so that no second copy is launched; processes of plugins
 * no longer configured are stopped. Every configured plugin's alloc id is {@code agent-<id>}, the
 * same on every start, so its re-registration confirms the restored entry, and
 * {@link PluginRegistry#reconcile} removes the entries of plugins no longer configured.
 *
 * <p><b>Artifacts, discovery, resources.</b> Plugins with an {@code artifact} are launched from
 * a verified revision under {@code <data_dir>/plugins} (see {@link PluginTask}); with a
 * {@code discovery_dir}, every socket appearing there is supervised as an external plugin
 * ({@link DiscoveryDir}); launched plugins' CPU and memory are sampled on the agent's scheduler
 * ({@link ResourceMonitor}). {@link #reload} applies a changed plugin list while running.
 *
 * <p><b>Stop.</b> {@link #close()}: supervision stops and deregisters every plugin, and launched
 * processes get SIGTERM then SIGKILL after the grace period; or, with {@code leave_running}, the
 * processes and the registrations are left as they are for the next start.
 *
 * <p>Thread-safe. Lifecycle {@code NEW → RUNNING → CLOSED}; {@link #start()} once, close
 * idempotent. Listeners run on the agent's own listener thread ({@code csi-agent-listeners}), one
 * event at a time in emission order, outside every lock of the agent and the supervisor.
 *
 * <p>Where each part lives: the threads in {@link AgentThreads}; restore and reconcile in
 * {@link RegistryRestore}; the plugin tasks and their supervisor in {@link PluginTasks}, the previous run's
 * processes in {@link ReattachPolicy}; one plugin's process and supervision in {@link PluginTask}; the discovery
 * directory's plugins in {@link DiscoveredPlugins}; a reload's diff in {@link TaskReload}; the volume manager, its
 * cluster claims and metrics in {@link AgentVolumes}; events to listeners in {@link PluginEvents}; the admin API's
 * view in {@link AdminProtos}.
 */
public final class Agent implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Agent.class);
  /** How far an admin event stream may fall behind before it is closed as lagged. */
  static final int ADMIN_MAX_BACKLOG = 10_000;
  /** The alloc id prefix of discovered plugins: {@code discovered-<id>}. */
  public static final String DISCOVERED_ALLOC_PREFIX = "discovered-";

  private enum State { NEW, RUNNING, CLOSED }

  private final AgentConfig config;
  private final Clock clock;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch terminated = new CountDownLatch(1);
  private final AgentMetrics metrics = new AgentMetrics();
  private final PluginEvents events = new PluginEvents(metrics);
  /** Guards a reload's swap of the plugin tasks against close. */
  private final Object reloadLock = new Object();
  private volatile AgentConfig current;

  // Set up by start(), in this order; close() takes down whatever was set up.
  private Instant started;
  private AgentThreads threads;
  private ArtifactStore artifacts;
  private ResourceMonitor monitor;
  private StateStore store;
  private PluginRegistry registry;
  /** The volume manager, its cluster claims and metrics, the cluster's volumes as last read. */
  private AgentVolumes volumes;
  /** The operator page's data (answers once started). */
  private final OperatorView operatorView;
  /** The cluster catalog membership (none until {@code cluster:} is applied); closed after the plugins stop. */
  private volatile ClusterMembership cluster;
  private final List<Subscription> subscriptions = new ArrayList<>();
  /** The configured and discovered plugins' tasks and their supervisor (none before step 3). */
  private volatile PluginTasks plugins;
  private AdminServer adminServer;
  private InetSocketAddress metricsBound;

  private Agent(AgentConfig config, Clock clock) {
    this.config = requireNonNull(config, "config");
    this.current = config;
    this.clock = requireNonNull(clock, "clock");
    this.operatorView = new OperatorView(this, clock);
  }

  public static Agent create(AgentConfig config) {
    return new Agent(config, Clock.systemUTC());
  }

  /** Adds a listener for task events; add it before {@link #start()} to see every event. */
  public void addListener(AgentListener listener) {
    events.addListener(listener);
  }

  // ---- start -------------------------------------------------------------------------------

  /**
   * Starts the agent: state, registry, metrics, plugins, admin API.
   *
   * @throws AgentException naming what could not be set up: the data dir, a state file locked by
   *     another agent, the admin socket, the metrics address
   * @throws IllegalStateException if started twice or after close
   */
  public void start() throws AgentException {
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException("agent already started or closed");
    }
    started = clock.instant();
    try {
      startComponents();
    } catch (AgentException | RuntimeException e) {
      // The caller reports it (the CLI prints it once); the log only keeps the detail.
      log.debug("agent failed to start", e);
      close();
      throw e;
    }
  }

  private void startComponents() throws AgentException {
    AgentDirs.prepare(config.dataDir(), "data_dir");
    AgentDirs.prepare(config.csiRoot(), "csi_root");
    threads = new AgentThreads();
    events.deliverOn(threads.listeners);
    artifacts = ArtifactStore.builder(config.pluginsDir()).scheduler(threads.scheduler)
        .io(threads.io).build();
    if (!config.resourceInterval().isZero()) {
      monitor = ResourceMonitor.system(clock, config.resourceHistory());
      metrics.watchResources(monitor::current);
    }

    // Step 1: restore the registry from the state (checkpoint + journal).
    store = RegistryRestore.openStore(config, metrics);
    // The volume records first, from what the store read at open (the registry's restore takes that).
    Map<String, byte[]> volumeRecords = store.loadAll(VolumeManager.STORE_PREFIX);
    registry = RegistryRestore.restore(config, store, clock, threads.scheduler);
    metrics.watchRegistry(registry);
    for (PluginType t : PluginType.values()) {
      subscriptions.add(registry.subscribe(t, new RegistryLog(metrics), threads.events));
    }
    // The volume manager keeps its records in the same store (AgentVolumes: its cluster claims, its metrics).
    volumes = AgentVolumes.start(config, clock, threads, registry, store, volumeRecords, metrics, operatorView,
        () -> Optional.ofNullable(cluster));
    metrics.buildInfo(version());
    volumes.watchVolumes();
    try {
      cluster = new ClusterMembership(registry, metrics, NodeInstance.load(config.dataDir()));
    } catch (java.io.IOException e) {
      throw new AgentException("data_dir: cannot read or make the node instance token in " + config.dataDir() + ": "
          + e.getMessage(), e);
    }
    volumes.watchCluster(this::clusterNode);

    // Step 2: the metrics address, before any plugin process is touched: an address in use fails the
    // start without launching, re-attaching to or stopping a plugin.
    if (config.metricsAddress() != null) {
      try {
        metricsBound = metrics.serve(config.metricsAddress(), new OperatorPages(operatorView));
        log.info("metrics on http://{}:{}/metrics, the operator page on /ui/",
            metricsBound.getAddress().getHostAddress(), metricsBound.getPort());
      } catch (IOException e) {
        throw new AgentException(e.getMessage(), e);
      }
    }

    // Step 3: the plugin tasks — re-attach to live processes, launch the rest. Step 4: the discovery directory's
    // sockets.
    plugins = new PluginTasks(config, clock, threads, events, metrics, artifacts, monitor, registry);
    Set<String> live = new HashSet<>(plugins.start());

    // Step 5: drop what the previous run registered for plugins that are gone.
    config.plugins().forEach(p -> live.add(p.allocId()));
    RegistryRestore.reconcile(config, registry, live);
    plugins.rotateLogsEverySecond();
    // The cluster's volumes for the STUCK metric and the page.
    volumes.startClusterReads(threads);

    // Step 6: serve the admin API.
    AdminService adminService = new AdminService(registry, () -> AdminProtos.agentStatus(this),
        threads.events, ADMIN_MAX_BACKLOG, () -> AdminProtos.reload(this));
    metrics.watchAdminStreams(adminService::watcherCount, adminService::backlog);
    try {
      adminServer = AdminServer.start(config.adminSocket(), adminService,
          new VolumeAdminService(volumes.manager(), threads.scheduler,
              id -> plugins.unknownPlugin(id, currentConfig(), registry)));
    } catch (IOException e) {
      throw new AgentException(e.getMessage(), e);
    }
    operatorView.ready();
    log.info("agent running: {} plugin(s), data_dir {}, admin socket {}", plugins.tasks().size(),
        config.dataDir(), config.adminSocket());
  }

  // ---- reload ------------------------------------------------------------------------------

  /**
   * Applies a new config's plugin list to the running agent: new plugins are started, removed
   * ones stopped (and deregistered), and changed ones updated. A change of only what a launched
   * plugin's process runs (command, args, env, artifact, resource limits) restarts its process
   * under the same supervision, so its registration is UPDATED; any other change (type, socket,
   * probe or restart settings) replaces the task (DEREGISTERED, then REGISTERED). Settings
   * outside {@code plugins} need a restart of the agent: they are reported and left as they are.
   * The diff itself is {@link TaskReload}'s.
   *
   * @return one line per change made or refused, for logs and the operator
   * @throws IllegalStateException if the agent is not running
   */
  public List<String> reload(AgentConfig next) {
    requireNonNull(next, "next");
    List<String> changes = new ArrayList<>();
    synchronized (reloadLock) {
      if (state.get() != State.RUNNING) {
        throw new IllegalStateException("agent is not running");
      }
      if (!config.sameAgentSettings(next)) {
        changes.add("settings outside plugins changed: they take effect when the agent is"
            + " restarted");
      }
      TaskReload.Result r = plugins.reload(next.plugins());
      changes.addAll(r.changes());
      current = config.withPlugins(List.copyOf(next.plugins().stream()
          .filter(p -> r.tasks().containsKey(p.id())).toList()));
      for (PluginTask t : r.toStart()) {
        t.start(null);
      }
    }
    if (changes.isEmpty()) {
      changes.add("no plugin changed");
    }
    changes.forEach(c -> log.info("reload: {}", c));
    return changes;
  }

  /**
   * Reads the config file the agent was started with again and {@link #reload}s it.
   *
   * @throws ConfigException if the file is now invalid (nothing is changed then)
   * @throws IllegalStateException if the config was not read from a file
   */
  public List<String> reloadFromFile() throws ConfigException {
    if (config.source() == null) {
      throw new IllegalStateException("the agent's config was not read from a file");
    }
    ConfigLoader.Sections file = ConfigLoader.loadSections(config.source());
    // The log: section, under the environment as at start-up.
    LogSettings logSettings = file.log().overriddenBy(System.getenv());
    List<String> changes = new ArrayList<>(reload(file.agent()));
    // The cluster: section: joined, left, or published again with the new settings.
    changes.addAll(cluster().apply(file.cluster()));
    List<String> logChanges = AgentLogging.apply(logSettings);
    logChanges.forEach(c -> log.info("reload: {}", c));
    changes.addAll(logChanges);
    return changes;
  }

  // ---- stop --------------------------------------------------------------------------------

  /** Blocks until the agent has closed. */
  public void awaitTermination() throws InterruptedException {
    terminated.await();
  }

  /**
   * Stops the agent (see the class comment for what happens to the plugins). Idempotent; blocks
   * until the plugins are stopped (at most the grace period plus a few seconds).
   */
  @Override
  public void close() {
    State was = state.getAndSet(State.CLOSED);
    if (was == State.CLOSED) {
      return;
    }
    if (was == State.NEW) {
      terminated.countDown();
      return;
    }
    Map<String, PluginTask> all;
    synchronized (reloadLock) {
      // A reload in progress finishes first; later ones see CLOSED.
      all = plugins == null ? Map.of() : plugins.tasks();
    }
    log.info("agent stopping ({} plugin(s), leave_running={})", all.size(),
        config.leaveRunning());
    if (plugins != null) {
      plugins.cancelTimers();
    }
    // Before any plugin stops: a volume operation in flight stays recorded for the next start
    // instead of being retried against plugins that are going away. Mounts stay mounted.
    closeQuietly(volumes);
    if (plugins != null) {
      plugins.stop(all);
    }
    if (config.leaveRunning() && threads != null) {
      // Stop supervision without deregistering: the registrations stay in the state file for
      // the next start to restore and confirm.
      threads.shutdownScheduler();
    }
    // After the plugins: their deregistrations are published, then the lease is revoked.
    closeQuietly(cluster);
    closeQuietly(plugins);
    subscriptions.forEach(Subscription::close);
    // Closing the registry ends the admin event streams (onClosed), so the server stops quickly.
    closeQuietly(registry);
    closeQuietly(adminServer);
    closeQuietly(store);
    closeQuietly(metrics);
    if (threads != null) {
      threads.shutdown();
    }
    log.info("agent stopped");
    terminated.countDown();
  }

  static void closeQuietly(AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (Exception e) {
      log.warn("closing {} failed: {}", c, e.toString());
    }
  }

  // ---- observers ---------------------------------------------------------------------------

  public AgentConfig config() {
    return config;
  }

  /** The config in effect: the one started with, or the last one {@link #reload}ed. */
  public AgentConfig currentConfig() {
    return current;
  }

  /** The registry (for embedding and tests). */
  public PluginRegistry registry() {
    return registry;
  }

  /**
   * The agent's cluster catalog membership: {@link ClusterMembership#apply} with the config's {@code cluster:}
   * section after {@link #start()}; a reload from the file applies it again.
   *
   * @throws IllegalStateException before start
   */
  public ClusterMembership cluster() {
    ClusterMembership c = cluster;
    if (c == null) {
      throw new IllegalStateException("agent not started");
    }
    return c;
  }

  /** The current cluster catalog node, if the agent is in a cluster. */
  public Optional<dev.csisupervisor.agent.cluster.ClusterNode> clusterNode() {
    ClusterMembership c = cluster;
    return c == null ? Optional.empty() : c.node();
  }

  /** The volume manager (for embedding and tests); null before start. */
  public VolumeManager volumes() {
    AgentVolumes v = volumes;
    return v == null ? null : v.manager();
  }

  /** The volume manager's parts the operator page reads: the cluster's volumes, stats, pending volumes. */
  AgentVolumes volumeParts() {
    return volumes;
  }

  public AgentMetrics metrics() {
    return metrics;
  }

  /** Where the metrics endpoint listens, once started, if it is on. */
  public Optional<InetSocketAddress> metricsAddress() {
    return Optional.ofNullable(metricsBound);
  }

  /** When {@link #start()} was called. */
  Instant started() {
    return started;
  }

  /** Every plugin task, in config order, then the discovered plugins by id. */
  public List<TaskStatus> tasks() {
    PluginTasks p = plugins;
    return p == null ? List.of() : p.statuses();
  }

  /** A configured or discovered plugin's task. */
  public Optional<TaskStatus> task(String id) {
    PluginTasks p = plugins;
    return p == null ? Optional.empty() : p.status(id);
  }

  /** The discovery directory's sockets, if there is one. */
  public List<DiscoveryDir.Entry> discoveredSockets() {
    PluginTasks p = plugins;
    return p == null ? List.of() : p.discoveredSockets();
  }

  /** The agent's version, from the jar manifest when packaged. */
  public static String version() {
    String v = Agent.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
  }
}
