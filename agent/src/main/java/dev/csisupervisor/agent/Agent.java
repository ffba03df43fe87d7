package dev.csisupervisor.agent;

import dev.csisupervisor.common.FileWatcher;
import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.admin.AdminServer;
import dev.csisupervisor.agent.admin.VolumeAdminService;
import dev.csisupervisor.agent.admin.AdminService;
import dev.csisupervisor.agent.cluster.ClusterController;
import dev.csisupervisor.agent.cluster.ClusterMembership;
import dev.csisupervisor.agent.cluster.NodeInstance;
import dev.csisupervisor.agent.cluster.ClusterVolumeClaims;
import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.agent.logging.AgentLogging;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.web.OperatorPages;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.tasks.process.RotatingLog;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.volumes.MountTable;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.TaskContext;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.function.LongSupplier;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * {@link RegistryRestore}; the previous run's processes in {@link ReattachPolicy}; one plugin's
 * process and supervision in {@link PluginTask}; the discovery directory's plugins in
 * {@link DiscoveredPlugins}; a reload's diff in {@link TaskReload}; events to listeners in
 * {@link PluginEvents}; the admin API's view in {@link AdminProtos}.
 */
public final class Agent implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Agent.class);
  /** How far an admin event stream may fall behind before it is closed as lagged. */
  static final int ADMIN_MAX_BACKLOG = 10_000;
  /** How often the cluster's volumes are read for the STUCK metric and the operator page's banner. */
  static final Duration CLUSTER_READ_INTERVAL = Duration.ofSeconds(10);
  /** The alloc id prefix of discovered plugins: {@code discovered-<id>}. */
  public static final String DISCOVERED_ALLOC_PREFIX = "discovered-";

  private enum State { NEW, RUNNING, CLOSED }

  private final AgentConfig config;
  private final Clock clock;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch terminated = new CountDownLatch(1);
  private final AgentMetrics metrics = new AgentMetrics();
  private final PluginEvents events = new PluginEvents(metrics);
  /** The plugin tasks in config order; replaced, never changed, by a reload (under reloadLock). */
  private volatile Map<String, PluginTask> tasks = Map.of();
  private final Object reloadLock = new Object();
  private volatile AgentConfig current;

  // Set up by start(), in this order; close() takes down whatever was set up.
  private Instant started;
  private AgentThreads threads;
  private ArtifactStore artifacts;
  private ResourceMonitor monitor;
  private StateStore store;
  private PluginRegistry registry;
  private VolumeManager volumes;
  private AutoCloseable volumeEvents;
  private AutoCloseable volumePending;
  private VolumeMetrics volumeMetrics;
  /** The operator page's data (answers once started); the cluster's volumes it and the metrics read. */
  private final OperatorView operatorView;
  private ClusterReads clusterReads;
  private ScheduledFuture<?> clusterRefresh;
  /** The cluster catalog membership (none until {@code cluster:} is applied); closed after the plugins stop. */
  private volatile ClusterMembership cluster;
  private ClusterVolumeClaims clusterClaims;
  private final List<Subscription> subscriptions = new ArrayList<>();
  private CsiPluginSupervisor supervisor;
  /** Plugin sockets and the discovery directory: one inotify instance and thread for both. */
  private FileWatcher fileWatcher;
  private ProcessRecords records;
  private TaskServices taskServices;
  private ScheduledFuture<?> sampling;
  private volatile DiscoveredPlugins discovered;
  private TaskReload reloader;
  private ScheduledFuture<?> rotation;
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
    prepareDir(config.dataDir(), "data_dir");
    prepareDir(config.csiRoot(), "csi_root");
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
    // The volume manager keeps its records in the same store; what a crash interrupted is settled as
    // soon as each volume's node plugin is registered and confirmed again.
    // In a cluster (cluster: in the config, now or after a reload) every mount takes its claim in etcd first, and
    // the controller publish is the elected controller agent's; claims no record holds are released every 30 s.
    volumeMetrics = new VolumeMetrics(metrics, registry, clock);
    clusterClaims = new ClusterVolumeClaims(() -> Optional.ofNullable(cluster).flatMap(ClusterMembership::node)
        .map(n -> new ClusterVolumeClaims.Membership(n.volumes(), n.config().nodeId(), n::status)), registry,
        threads.scheduler, config.volumeMountWait(), Duration.ofSeconds(30));
    volumes = VolumeManager.builder().registry(registry).stateStore(store).csiRoot(config.csiRoot())
        .clusterClaims(new ObservedClaims(clusterClaims, operatorView::claimRefused))
        .scheduler(threads.scheduler).clock(clock, System::nanoTime).clientFactory(volumeMetrics::client)
        .mountWait(config.volumeMountWait()).healthInterval(config.volumeHealthInterval())
        .mountTable(config.volumeVerifyMounts() ? Optional.of(MountTable.proc()) : Optional.empty())
        .records(volumeRecords).build();
    clusterClaims.bind(volumes);
    if (!config.volumeVerifyMounts()) {
      log.warn("volumes.verify_mounts is false: volume mounts are not checked against the mount table (lost"
          + " mounts are not mounted again, unmounts not verified, orphan mounts not found); only for plugins"
          + " that mount nothing, such as the mock plugin");
    }
    // A count per event: the listener does nothing that blocks, so it runs where the event is emitted.
    volumeEvents = volumes.addListener(e -> {
      metrics.volumeEvent(e.kind().name());
      operatorView.volumeEvent(e);
    }, Runnable::run);
    volumePending = volumeMetrics.watch(volumes);
    metrics.buildInfo(version());
    metrics.watchVolumes(() -> volumeCounts(volumes), () -> volumes.abnormal().size(),
        () -> volumes.list().stream().filter(VolumeRecord::hasLost).count());
    try {
      cluster = new ClusterMembership(registry, metrics, NodeInstance.load(config.dataDir()));
    } catch (java.io.IOException e) {
      throw new AgentException("data_dir: cannot read or make the node instance token in " + config.dataDir() + ": "
          + e.getMessage(), e);
    }
    java.util.function.Function<java.util.function.ToLongFunction<ClusterController.Counts>, LongSupplier> counts =
        f -> () -> cluster.node().map(n -> f.applyAsLong(n.controller().counts())).orElse(0L);
    metrics.watchClusterVolumes(() -> cluster.node().map(n -> (long) n.controller().leading().size()).orElse(0L),
        counts.apply(ClusterController.Counts::publishes), counts.apply(ClusterController.Counts::unpublishes),
        counts.apply(ClusterController.Counts::fenced), counts.apply(ClusterController.Counts::creates),
        counts.apply(ClusterController.Counts::deletes), clusterClaims::pendingReleases);
    clusterReads = new ClusterReads(() -> Optional.ofNullable(cluster).flatMap(ClusterMembership::node), clock);
    metrics.watchClusterStuck(clusterReads::stuckCounts);

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

    // Step 3: the plugin tasks — re-attach to live processes, launch the rest.
    fileWatcher = new FileWatcher();
    supervisor = CsiPluginSupervisor.builder().csiRoot(config.csiRoot()).registry(registry)
        .scheduler(threads.scheduler).clock(clock).probeObserver(this::probed)
        .fileWatcher(fileWatcher).build();
    try {
      records = ProcessRecords.open(config.processesFile(), clock);
    } catch (IOException e) {
      throw new AgentException("cannot read " + config.processesFile() + ": " + e.getMessage(), e);
    }
    taskServices = new TaskServices(threads.scheduler, threads.io, clock, records,
        config.shutdownGrace(), events::emit, metrics, artifacts, monitor);
    ReattachPolicy reattach = new ReattachPolicy(config, records, artifacts, threads.scheduler);
    reattach.stopUnconfigured();
    Set<String> withArtifacts = new HashSet<>();
    config.plugins().stream().filter(p -> p.artifact() != null)
        .forEach(p -> withArtifacts.add(p.id()));
    artifacts.removeAllBut(withArtifacts);
    Map<String, PluginTask> created = new LinkedHashMap<>();
    for (PluginSpec spec : config.plugins()) {
      created.put(spec.id(), newTask(spec));
    }
    tasks = Collections.unmodifiableMap(created);
    Map<PluginTask, LaunchedProcess> adopt = new LinkedHashMap<>();
    for (PluginTask task : created.values()) {
      adopt.put(task, reattach.reattachable(task));
    }
    reattach.awaitStopped();
    adopt.forEach(PluginTask::start);
    if (monitor != null) {
      sampling = monitor.start(threads.scheduler, config.resourceInterval());
    }

    // Step 4: the discovery directory's sockets.
    discovered = new DiscoveredPlugins(config, supervisor, fileWatcher, taskServices, events);
    Set<String> live = new HashSet<>();
    if (config.discoveryDir() != null) {
      live.addAll(discovered.start(id -> tasks.containsKey(id)));
    }
    reloader = new TaskReload(this::newTask, discovered::has, threads.io);

    // Step 5: drop what the previous run registered for plugins that are gone.
    config.plugins().forEach(p -> live.add(p.allocId()));
    RegistryRestore.reconcile(config, registry, live);
    rotation = threads.scheduler.scheduleWithFixedDelay(this::rotateLogs, 1, 1, TimeUnit.SECONDS);
    // The cluster's volumes for the STUCK metric and the page, read off the scheduler (etcd may be slow).
    clusterRefresh = threads.scheduler.scheduleWithFixedDelay(() -> {
      try {
        threads.io.execute(clusterReads::refresh);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // stopping
      }
    }, 0, CLUSTER_READ_INTERVAL.toMillis(), TimeUnit.MILLISECONDS);

    // Step 6: serve the admin API.
    AdminService adminService = new AdminService(registry, () -> AdminProtos.agentStatus(this),
        threads.events, ADMIN_MAX_BACKLOG, () -> AdminProtos.reload(this));
    metrics.watchAdminStreams(adminService::watcherCount, adminService::backlog);
    try {
      adminServer = AdminServer.start(config.adminSocket(), adminService,
          new VolumeAdminService(volumes, threads.scheduler, this::unknownPlugin));
    } catch (IOException e) {
      throw new AgentException(e.getMessage(), e);
    }
    operatorView.ready();
    log.info("agent running: {} plugin(s), data_dir {}, admin socket {}", tasks.size(),
        config.dataDir(), config.adminSocket());
  }

  private PluginTask newTask(PluginSpec spec) {
    AtomicReference<PluginTask> self = new AtomicReference<>();
    CsiPluginSupervisorHook hook = supervisor.hook(
        new TaskContext(spec.allocId(), spec.id()),
        ConfigLoader.toSupervisorConfig(spec, config.csiRoot()),
        event -> events.taskEvent(spec.id(), spec.type(), spec.allocId(), event),
        // Must not block (it runs on the supervisor's scheduler): queue the restart.
        reason -> threads.scheduler.execute(() -> self.get().requestRestart(reason)));
    RotatingLog logFile = spec.launched()
        ? new RotatingLog(config.logDir().resolve(spec.id() + ".log"), config.logMaxBytes(),
            config.logMaxFiles())
        : null;
    PluginTask task = new PluginTask(spec, hook, logFile, taskServices);
    self.set(task);
    return task;
  }

  /** The supervisor's probe observer: metrics, and the launched task's revision check. */
  private void probed(String pluginId, Duration latency, boolean ready, String error) {
    long sent = System.nanoTime() - latency.toNanos();
    metrics.probe(pluginId, latency, ready, error);
    PluginTask t = tasks.get(pluginId);
    if (t != null) {
      t.probed(ready && error.isEmpty(), sent);
    }
  }

  private void rotateLogs() {
    for (PluginTask t : tasks.values()) {
      t.rotateLog();
    }
  }

  private static void prepareDir(Path dir, String field) throws AgentException {
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw new AgentException(field + ": " + dir + " exists and is not a directory", null, true);
    }
    try {
      if (!Files.isDirectory(dir)) {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      }
    } catch (FileAlreadyExistsException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: " + e.getFile()
          + " exists and is not a directory", e, true);
    } catch (AccessDeniedException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: permission denied ("
          + e.getFile() + ")", e);
    } catch (IOException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: " + e, e);
    }
    if (!Files.isWritable(dir)) {
      throw new AgentException(field + " " + dir + " is not writable");
    }
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
      TaskReload.Result r = reloader.apply(tasks, next.plugins());
      changes.addAll(r.changes());
      tasks = r.tasks();
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
      all = tasks;
    }
    log.info("agent stopping ({} plugin(s), leave_running={})", all.size(),
        config.leaveRunning());
    if (rotation != null) {
      rotation.cancel(false);
    }
    if (clusterRefresh != null) {
      clusterRefresh.cancel(false);
    }
    if (sampling != null) {
      sampling.cancel(false);
    }
    // Before any plugin stops: a volume operation in flight stays recorded for the next start
    // instead of being retried against plugins that are going away. Mounts stay mounted.
    closeQuietly(volumeEvents);
    closeQuietly(volumePending);
    closeQuietly(volumes);
    closeQuietly(clusterClaims);
    if (discovered != null) {
      discovered.close(config.leaveRunning());
    }
    if (config.leaveRunning()) {
      all.values().forEach(PluginTask::detach);
      // Stop supervision without deregistering: the registrations stay in the state file for
      // the next start to restore and confirm.
      if (threads != null) {
        threads.shutdownScheduler();
      }
    } else {
      List<CompletableFuture<Void>> stops = new ArrayList<>();
      for (PluginTask t : all.values()) {
        stops.add(t.stop("agent shutting down"));
      }
      try {
        CompletableFuture.allOf(stops.toArray(CompletableFuture[]::new))
            .get(config.shutdownGrace().toMillis() + 5_000, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (TimeoutException | ExecutionException e) {
        log.warn("some plugins did not stop in time: {}", e.toString());
      }
    }
    // After the plugins: their deregistrations are published, then the lease is revoked.
    closeQuietly(cluster);
    closeQuietly(supervisor);
    closeQuietly(fileWatcher);
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

  private static void closeQuietly(AutoCloseable c) {
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
    return volumes;
  }

  private static Map<String, Long> volumeCounts(VolumeManager volumes) {
    long pending = volumes.pending().size();
    // A record that only owes a node expansion is no volume on this node.
    long onNode = volumes.list().stream().filter(VolumeRecord::onNode).count();
    return Map.of("mounted", onNode - pending, "pending", pending);
  }

  /**
   * Why a mount for {@code id} is refused at once: the config does not name it, no plugin of that id is registered and
   * the discovery directory has not shown it; empty if it is known (a mount of it then waits for it to be ready).
   */
  private Optional<String> unknownPlugin(String id) {
    Set<String> known = new java.util.TreeSet<>();
    currentConfig().plugins().forEach(p -> known.add(p.id()));
    for (PluginType t : PluginType.values()) {
      registry.listAll(t).forEach(p -> known.add(p.name()));
    }
    discoveredSockets().forEach(e -> known.add(e.id()));
    if (known.contains(id)) {
      return Optional.empty();
    }
    return Optional.of("no plugin " + id + " on this agent: its config does not name it, none is registered and its"
        + " discovery directory has not shown one" + (known.isEmpty() ? " (it has no plugin)"
            : " (its plugins: " + String.join(", ", known) + ")"));
  }

  /** The cluster's volumes as last read (none without a cluster). */
  ClusterReads clusterReads() {
    return clusterReads;
  }

  /** The last NodeGetVolumeStats answer of each volume on this node. */
  Map<dev.csisupervisor.agent.metrics.VolumeStatsCache.Key, dev.csisupervisor.client.VolumeStats> volumeStats() {
    return volumeMetrics.stats(volumes);
  }

  /** The volumes with work pending now, each with since when it waits. */
  java.util.SortedMap<String, Instant> pendingVolumes() {
    return volumeMetrics.pendingSince(volumes);
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
    List<TaskStatus> out = new ArrayList<>();
    for (PluginTask t : tasks.values()) {
      out.add(t.status());
    }
    DiscoveredPlugins d = discovered;
    if (d != null) {
      out.addAll(d.statuses());
    }
    return out;
  }

  /** A configured or discovered plugin's task. */
  public Optional<TaskStatus> task(String id) {
    PluginTask t = tasks.get(id);
    if (t != null) {
      return Optional.of(t.status());
    }
    DiscoveredPlugins d = discovered;
    return d == null ? Optional.empty() : d.status(id);
  }

  /** The discovery directory's sockets, if there is one. */
  public List<DiscoveryDir.Entry> discoveredSockets() {
    DiscoveredPlugins d = discovered;
    return d == null ? List.of() : d.entries();
  }

  /** The agent's version, from the jar manifest when packaged. */
  public static String version() {
    String v = Agent.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
  }

  /** The agent could not start; the message says what and where. */
  public static final class AgentException extends Exception {
    private static final long serialVersionUID = 1L;

    private final boolean configError;

    public AgentException(String message) {
      this(message, null, false);
    }

    public AgentException(String message, Throwable cause) {
      this(message, cause, false);
    }

    public AgentException(String message, Throwable cause, boolean configError) {
      super(message, cause);
      this.configError = configError;
    }

    /** Whether the config is wrong (exit 2) rather than the machine (exit 1). */
    public boolean configError() {
      return configError;
    }
  }
}
