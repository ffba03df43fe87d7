package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.agent.admin.AdminServer;
import dev.csisupervisor.agent.admin.AdminService;
import dev.csisupervisor.agent.admin.ProtoMapper;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.metrics.TimedStateStore;
import dev.csisupervisor.agent.process.LaunchedProcess;
import dev.csisupervisor.agent.process.ProcessRecord;
import dev.csisupervisor.agent.process.ProcessRecords;
import dev.csisupervisor.agent.process.RotatingLog;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.MapDbStateStore;
import dev.csisupervisor.state.StateFileLockedException;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.TaskContext;
import dev.csisupervisor.supervisor.TaskEvent;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The csi-agent daemon: runs the configured CSI plugins as the node's task runner, supervises
 * them with a {@link CsiPluginSupervisor}, keeps them in a {@link PluginRegistry} persisted to
 * {@code <data_dir>/registry.db}, and serves the admin API and metrics.
 *
 * <p><b>Start.</b> The registry restores the registrations of the previous run. Launched plugin
 * processes that are still alive (recorded in {@code <data_dir>/processes.json}) are re-attached,
 * whatever {@code leave_running} said, so that no second copy is launched; processes of plugins
 * no longer configured are stopped. Every configured plugin's alloc id is {@code agent-<id>}, the
 * same on every start, so its re-registration confirms the restored entry, and
 * {@link PluginRegistry#reconcile} removes the entries of plugins no longer configured.
 *
 * <p><b>Stop.</b> {@link #close()}: supervision stops and deregisters every plugin, and launched
 * processes get SIGTERM then SIGKILL after the grace period; or, with {@code leave_running}, the
 * processes and the registrations are left as they are for the next start.
 *
 * <p>Thread-safe. Lifecycle {@code NEW → RUNNING → CLOSED}; {@link #start()} once, close
 * idempotent. Listeners run on the agent's scheduler threads.
 */
public final class Agent implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(Agent.class);
  /** How far an admin event stream may fall behind before it is closed as lagged. */
  static final int ADMIN_MAX_BACKLOG = 10_000;

  private enum State { NEW, RUNNING, CLOSED }

  private final AgentConfig config;
  private final Clock clock;
  private final List<AgentListener> listeners = new CopyOnWriteArrayList<>();
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch terminated = new CountDownLatch(1);
  private final Map<String, PluginTask> tasks = new LinkedHashMap<>();
  private final AgentMetrics metrics = new AgentMetrics();

  private ScheduledExecutorService scheduler;
  private ExecutorService eventExecutor;
  private StateStore store;
  private PluginRegistry registry;
  private CsiPluginSupervisor supervisor;
  private ProcessRecords records;
  private AdminServer adminServer;
  private AdminService adminService;
  private InetSocketAddress metricsBound;
  private final List<Subscription> subscriptions = new ArrayList<>();
  private ScheduledFuture<?> rotation;
  private Instant started;

  private Agent(AgentConfig config, Clock clock) {
    this.config = requireNonNull(config, "config");
    this.clock = requireNonNull(clock, "clock");
  }

  public static Agent create(AgentConfig config) {
    return new Agent(config, Clock.systemUTC());
  }

  /** Adds a listener for task events; add it before {@link #start()} to see every event. */
  public void addListener(AgentListener listener) {
    listeners.add(requireNonNull(listener, "listener"));
  }

  /**
   * Starts the agent: state, registry, plugins, admin API, metrics.
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
      log.error("agent failed to start: {}", e.getMessage());
      close();
      throw e;
    }
  }

  private void startComponents() throws AgentException {
    prepareDir(config.dataDir(), "data_dir");
    prepareDir(config.csiRoot(), "csi_root");
    scheduler = newScheduler();
    eventExecutor = Executors.newSingleThreadExecutor(daemon("csi-agent-events"));

    // Step 1: restore the registry from the state file.
    try {
      store = new TimedStateStore(MapDbStateStore.open(config.dataDir()), metrics);
    } catch (StateFileLockedException e) {
      throw new AgentException("the state file in " + config.dataDir() + " is locked by another"
          + " process: is another csi-agent running with this data_dir? (" + e.getMessage() + ")",
          e);
    } catch (StateStoreException e) {
      throw new AgentException("cannot open the state file in " + config.dataDir() + ": "
          + e.getMessage(), e);
    }
    PluginRegistry.Builder rb = PluginRegistry.builder().stateStore(store).clock(clock);
    rb.restoreGracePeriod(restoreGrace(), scheduler);
    registry = rb.build();
    for (var problem : registry.restoreProblems()) {
      log.error("state record {} could not be restored: {}", problem.key(), problem.reason());
    }
    int restored = 0;
    for (PluginType t : PluginType.values()) {
      restored += registry.listAll(t).size();
    }
    log.info("registry restored {} registration(s) from {}", restored, config.dataDir());
    metrics.watchRegistry(registry);
    for (PluginType t : PluginType.values()) {
      subscriptions.add(registry.subscribe(t, new RegistryLog(), eventExecutor));
    }

    // Step 2: the plugin tasks — re-attach to live processes, launch the rest.
    supervisor = CsiPluginSupervisor.builder().csiRoot(config.csiRoot()).registry(registry)
        .scheduler(scheduler).clock(clock).probeObserver(metrics::probe).build();
    try {
      records = ProcessRecords.open(config.processesFile(), clock);
    } catch (IOException e) {
      throw new AgentException("cannot read " + config.processesFile() + ": " + e.getMessage(), e);
    }
    stopUnconfiguredProcesses();
    for (PluginSpec spec : config.plugins()) {
      tasks.put(spec.id(), newTask(spec));
    }
    for (PluginTask task : tasks.values()) {
      task.start(reattachable(task));
    }

    // Step 3: drop what the previous run registered for plugins that are gone.
    Set<String> live = new HashSet<>();
    config.plugins().forEach(p -> live.add(p.allocId()));
    List<PluginEvent> dropped = registry.reconcile(live);
    if (!dropped.isEmpty()) {
      log.info("reconciled away {} registration(s) of plugins no longer configured",
          dropped.size());
    }
    rotation = scheduler.scheduleWithFixedDelay(this::rotateLogs, 1, 1, TimeUnit.SECONDS);

    // Step 4: serve.
    adminService = new AdminService(registry, this::statusProto, eventExecutor,
        ADMIN_MAX_BACKLOG);
    metrics.watchAdminStreams(adminService::watcherCount, adminService::backlog);
    try {
      adminServer = AdminServer.start(config.adminSocket(), adminService);
    } catch (IOException e) {
      throw new AgentException(e.getMessage(), e);
    }
    if (config.metricsAddress() != null) {
      try {
        metricsBound = metrics.serve(config.metricsAddress());
        log.info("metrics on http://{}:{}/metrics", metricsBound.getAddress().getHostAddress(),
            metricsBound.getPort());
      } catch (IOException e) {
        throw new AgentException(e.getMessage(), e);
      }
    }
    log.info("agent running: {} plugin(s), data_dir {}, admin socket {}", tasks.size(),
        config.dataDir(), config.adminSocket());
  }

  private Duration restoreGrace() {
    // A restored entry of a configured plugin that has not come back by the time its health
    // timeout would have restarted it is stale.
    Duration max = Duration.ofSeconds(30);
    for (PluginSpec p : config.plugins()) {
      if (p.probe().healthTimeout().compareTo(max) > 0) {
        max = p.probe().healthTimeout();
      }
    }
    return max.plusSeconds(5);
  }

  private PluginTask newTask(PluginSpec spec) {
    AtomicReference<PluginTask> self = new AtomicReference<>();
    CsiPluginSupervisorHook hook = supervisor.hook(
        new TaskContext(spec.allocId(), spec.id()),
        ConfigLoader.toSupervisorConfig(spec),
        event -> onTaskEvent(spec, event),
        // Must not block, and the hook holds its lock here: queue the restart.
        reason -> scheduler.execute(() -> self.get().requestRestart(reason)));
    RotatingLog logFile = spec.launched()
        ? new RotatingLog(config.logDir().resolve(spec.id() + ".log"), config.logMaxBytes(),
            config.logMaxFiles())
        : null;
    PluginTask task = new PluginTask(spec, hook, scheduler, clock, records, logFile,
        config.shutdownGrace(), this::emit, () -> metrics.restart(spec.id()));
    self.set(task);
    return task;
  }

  /** The live process of a previous run for this task, if it is the same plugin. */
  private LaunchedProcess reattachable(PluginTask task) {
    PluginSpec spec = task.spec();
    if (!spec.launched()) {
      return null;
    }
    Optional<ProcessRecord> rec = records.get(spec.id());
    if (rec.isEmpty()) {
      return null;
    }
    Optional<LaunchedProcess> p = LaunchedProcess.reattach(rec.get());
    if (p.isEmpty()) {
      log.info("plugin={}: its process from the previous run (pid {}) is gone; launching it",
          spec.id(), rec.get().pid());
      return null;
    }
    List<String> want = PluginTask.commandLine(spec);
    String socket = task.hook().socketPath().toString();
    if (!rec.get().commandLine().equals(want) || !rec.get().socket().equals(socket)) {
      log.info("plugin={}: its config changed since pid {} was launched; stopping that process",
          spec.id(), p.get().pid());
      awaitQuietly(p.get().terminate(config.shutdownGrace(), scheduler));
      return null;
    }
    return p.get();
  }

  private void stopUnconfiguredProcesses() {
    for (ProcessRecord rec : records.all().values()) {
      if (config.plugin(rec.id()).filter(PluginSpec::launched).isPresent()) {
        continue;
      }
      LaunchedProcess.reattach(rec).ifPresent(p -> {
        log.info("plugin={} is no longer configured: stopping its process pid {}", rec.id(),
            p.pid());
        awaitQuietly(p.terminate(config.shutdownGrace(), scheduler));
      });
      try {
        records.remove(rec.id());
      } catch (IOException e) {
        log.warn("cannot remove the process record of {}: {}", rec.id(), e.toString());
      }
    }
  }

  private void awaitQuietly(CompletableFuture<?> f) {
    try {
      f.get(config.shutdownGrace().toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      log.warn("process did not stop in time: {}", e.toString());
    }
  }

  private void onTaskEvent(PluginSpec spec, TaskEvent event) {
    log.info("plugin={} type={} alloc={} event=\"{}\": {}", spec.id(),
        ConfigLoader.typeDir(spec.type()), spec.allocId(), event.type(), event.message());
    if (TaskEvent.PLUGIN_HEALTHY.equals(event.type())) {
      metrics.healthTransition(spec.id(), true);
    } else if (TaskEvent.PLUGIN_UNHEALTHY.equals(event.type())) {
      metrics.healthTransition(spec.id(), false);
    }
    emit(new AgentEvent(event.time(), spec.id(), event.type(), event.message()));
  }

  private void emit(AgentEvent event) {
    for (AgentListener l : listeners) {
      try {
        l.onEvent(event);
      } catch (RuntimeException e) {
        log.error("agent listener threw on {}", event, e);
      }
    }
  }

  private void rotateLogs() {
    for (PluginTask t : tasks.values()) {
      t.rotateLog();
    }
  }

  /** Logs and counts the registry's events, one line each. */
  private final class RegistryLog implements PluginListener {
    @Override
    public void onEvent(PluginEvent e) {
      metrics.registryEvent(e);
      log.info("registry {} plugin={} type={} alloc={} version={} healthy={} seq={}", e.kind(),
          e.plugin().name(), e.type(), e.plugin().allocId(), e.plugin().version(),
          e.plugin().health().healthy(), e.sequence());
    }

    @Override
    public void onLagged(long lastDeliveredSequence) {
      log.warn("registry event log lagged after sequence {}", lastDeliveredSequence);
    }
  }

  // ---- observers ---------------------------------------------------------------------------

  public AgentConfig config() {
    return config;
  }

  /** The registry (for embedding and tests). */
  public PluginRegistry registry() {
    return registry;
  }

  public AgentMetrics metrics() {
    return metrics;
  }

  /** Where the metrics endpoint listens, once started, if it is on. */
  public Optional<InetSocketAddress> metricsAddress() {
    return Optional.ofNullable(metricsBound);
  }

  /** Every plugin task, in config order. */
  public List<TaskStatus> tasks() {
    List<TaskStatus> out = new ArrayList<>();
    for (PluginTask t : tasks.values()) {
      out.add(t.status());
    }
    return out;
  }

  public Optional<TaskStatus> task(String id) {
    PluginTask t = tasks.get(id);
    return t == null ? Optional.empty() : Optional.of(t.status());
  }

  private GetAgentStatusResponse statusProto() {
    GetAgentStatusResponse.Builder b = GetAgentStatusResponse.newBuilder()
        .setPid(ProcessHandle.current().pid())
        .setVersion(version())
        .setStarted(ProtoMapper.timestamp(started))
        .setDataDir(config.dataDir().toString())
        .setCsiRoot(config.csiRoot().toString())
        .setAdminSocket(config.adminSocket().toString())
        .setMetricsUrl(metricsBound == null ? "" : "http://"
            + metricsBound.getAddress().getHostAddress() + ":" + metricsBound.getPort()
            + "/metrics");
    for (TaskStatus t : tasks()) {
      b.addTasks(dev.csisupervisor.admin.v1.TaskStatus.newBuilder()
          .setId(t.id())
          .setKind(ConfigLoader.typeDir(t.kind()))
          .setAllocId(t.allocId())
          .setLaunched(t.launched())
          .setProcessState(t.processState().name().toLowerCase(java.util.Locale.ROOT))
          .setPid(t.pid())
          .setRestarts(t.restarts())
          .setPhase(t.phase().name())
          .setHealthy(t.healthy())
          .setSocketPath(t.socket().toString())
          .setLogFile(t.logFile() == null ? "" : t.logFile().toString())
          .setReattached(t.reattached()));
    }
    return b.build();
  }

  /** The agent's version, from the jar manifest when packaged. */
  public static String version() {
    String v = Agent.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
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
    log.info("agent stopping ({} plugin(s), leave_running={})", tasks.size(),
        config.leaveRunning());
    if (rotation != null) {
      rotation.cancel(false);
    }
    if (config.leaveRunning()) {
      tasks.values().forEach(PluginTask::detach);
      // Stop supervision without deregistering: the registrations stay in the state file for
      // the next start to restore and confirm.
      shutdown(scheduler);
    } else {
      List<CompletableFuture<Void>> stops = new ArrayList<>();
      for (PluginTask t : tasks.values()) {
        stops.add(t.stop("agent shutting down"));
      }
      try {
        CompletableFuture.allOf(stops.toArray(CompletableFuture[]::new))
            .get(config.shutdownGrace().toMillis() + 5_000, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (TimeoutException | java.util.concurrent.ExecutionException e) {
        log.warn("some plugins did not stop in time: {}", e.toString());
      }
    }
    closeQuietly(supervisor);
    subscriptions.forEach(Subscription::close);
    // Closing the registry ends the admin event streams (onClosed), so the server stops quickly.
    closeQuietly(registry);
    closeQuietly(adminServer);
    closeQuietly(store);
    closeQuietly(metrics);
    shutdown(scheduler);
    if (eventExecutor != null) {
      eventExecutor.shutdown();
    }
    log.info("agent stopped");
    terminated.countDown();
  }

  private static void shutdown(ScheduledExecutorService s) {
    if (s == null) {
      return;
    }
    s.shutdownNow();
    try {
      s.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
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

  // ---- helpers -----------------------------------------------------------------------------

  private static void prepareDir(Path dir, String field) throws AgentException {
    try {
      if (!Files.isDirectory(dir)) {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      }
    } catch (IOException e) {
      throw new AgentException(field + " " + dir + " cannot be created: " + e, e);
    }
    if (!Files.isWritable(dir)) {
      throw new AgentException(field + " " + dir + " is not writable");
    }
  }

  private static ScheduledExecutorService newScheduler() {
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(2, daemon("csi-agent"));
    // Cancelled probes and restarts must not pile up in the queue.
    s.setRemoveOnCancelPolicy(true);
    return s;
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** The agent could not start; the message says what and where. */
  public static final class AgentException extends Exception {
    private static final long serialVersionUID = 1L;

    public AgentException(String message) {
      super(message);
    }

    public AgentException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
