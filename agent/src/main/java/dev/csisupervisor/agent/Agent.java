package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.agent.admin.AdminServer;
import dev.csisupervisor.agent.admin.AdminService;
import dev.csisupervisor.agent.admin.ProtoMapper;
import dev.csisupervisor.agent.artifact.ArtifactStore;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.config.ProbeSettings;
import dev.csisupervisor.agent.config.ResourceLimits;
import dev.csisupervisor.agent.discovery.CsiSocketClassifier;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.agent.discovery.SocketClassifier;
import dev.csisupervisor.agent.logging.AgentLogging;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.metrics.TimedStateStore;
import dev.csisupervisor.agent.process.LaunchedProcess;
import dev.csisupervisor.agent.process.ProcessRecord;
import dev.csisupervisor.agent.process.ProcessRecords;
import dev.csisupervisor.agent.process.RotatingLog;
import dev.csisupervisor.agent.resources.ResourceMonitor;
import dev.csisupervisor.agent.resources.ResourceSample;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateFileLockedException;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.StopRequest;
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
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
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
  /** The plugin tasks in config order; replaced, never changed, by a reload (under reloadLock). */
  private volatile Map<String, PluginTask> tasks = Map.of();
  private final Object reloadLock = new Object();
  private final Map<String, CsiPluginSupervisorHook> discovered = new ConcurrentHashMap<>();
  /** Tasks removed by a reload whose stop has not completed yet, by plugin id. */
  private final Map<String, CompletableFuture<Void>> stopping = new ConcurrentHashMap<>();
  private final AgentMetrics metrics = new AgentMetrics();
  private volatile AgentConfig current;

  private ScheduledExecutorService scheduler;
  private ExecutorService eventExecutor;
  /** Delivers {@link AgentListener} calls: one thread, in order, outside every lock. */
  private volatile ExecutorService listenerExecutor;
  private ThreadPoolExecutor io;
  private ArtifactStore artifacts;
  private ResourceMonitor monitor;
  private ScheduledFuture<?> sampling;
  private DiscoveryDir discovery;
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
    this.current = config;
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
      // The caller reports it (the CLI prints it once); the log only keeps the detail.
      log.debug("agent failed to start", e);
      close();
      throw e;
    }
  }

  private void startComponents() throws AgentException {
    prepareDir(config.dataDir(), "data_dir");
    prepareDir(config.csiRoot(), "csi_root");
    scheduler = newScheduler();
    eventExecutor = Executors.newSingleThreadExecutor(daemon("csi-agent-events"));
    listenerExecutor = Executors.newSingleThreadExecutor(daemon("csi-agent-listeners"));
    // Blocking work off the scheduler: artifact downloads and unpacking, closing clients.
    io = new ThreadPoolExecutor(4, 4, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
        daemon("csi-agent-io"));
    io.allowCoreThreadTimeOut(true);
    artifacts = ArtifactStore.builder(config.pluginsDir()).scheduler(scheduler).io(io).build();
    if (!config.resourceInterval().isZero()) {
      monitor = ResourceMonitor.system(clock, config.resourceHistory());
      metrics.watchResources(monitor::current);
    }

    // Step 1: restore the registry from the state (checkpoint + journal).
    try {
      store = new TimedStateStore(JournalStateStore.open(config.dataDir()), metrics);
    } catch (StateFileLockedException e) {
      throw new AgentException("the state in " + config.dataDir() + " is locked by another"
          + " process: is another csi-agent running with this data_dir? (" + e.getMessage() + ")",
          e);
    } catch (StateStoreException e) {
      throw new AgentException("cannot open the state in " + config.dataDir() + ": "
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
        .scheduler(scheduler).clock(clock).probeObserver(this::probed).build();
    try {
      records = ProcessRecords.open(config.processesFile(), clock);
    } catch (IOException e) {
      throw new AgentException("cannot read " + config.processesFile() + ": " + e.getMessage(), e);
    }
    // Old processes to stop are all signalled first, then waited for together (each may take
    // the grace period): start-up takes one grace period, not one per process.
    List<CompletableFuture<?>> terminating = new ArrayList<>();
    stopUnconfiguredProcesses(terminating);
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
      adopt.put(task, reattachable(task, terminating));
    }
    awaitQuietly(CompletableFuture.allOf(terminating.toArray(CompletableFuture[]::new)));
    adopt.forEach(PluginTask::start);
    if (monitor != null) {
      sampling = monitor.start(scheduler, config.resourceInterval());
    }

    // Step 3: the discovery directory's sockets.
    Set<String> live = new HashSet<>();
    if (config.discoveryDir() != null) {
      startDiscovery();
      discovery.candidateIds().forEach(id -> live.add(DISCOVERED_ALLOC_PREFIX + id));
    }

    // Step 4: drop what the previous run registered for plugins that are gone.
    config.plugins().forEach(p -> live.add(p.allocId()));
    List<PluginEvent> dropped = new ArrayList<>(registry.reconcile(live));
    dropped.addAll(dropTypesNoLongerServed());
    if (!dropped.isEmpty()) {
      log.info("reconciled away {} registration(s) of plugins no longer configured",
          dropped.size());
    }
    rotation = scheduler.scheduleWithFixedDelay(this::rotateLogs, 1, 1, TimeUnit.SECONDS);

    // Step 5: serve.
    adminService = new AdminService(registry, this::statusProto, eventExecutor,
        ADMIN_MAX_BACKLOG, this::reloadForAdmin);
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

  /** The alloc id prefix of discovered plugins: {@code discovered-<id>}. */
  public static final String DISCOVERED_ALLOC_PREFIX = "discovered-";

  private void startDiscovery() throws AgentException {
    SocketClassifier c = new CsiSocketClassifier(config.discoveryProbe().probeTimeout(), io);
    discovery = DiscoveryDir.builder(config.discoveryDir())
        .scheduler(scheduler)
        .classifier(c)
        .supervision(this::superviseDiscovered)
        .reserved(id -> tasks.containsKey(id))
        .listener((id, type, message) -> {
          log.info("plugin={} event=\"{}\": {}", id, type, message);
          emit(new AgentEvent(clock.instant(), id, type, message));
        })
        .backoff(config.discoveryProbe().initialBackoff().multipliedBy(10),
            Duration.ofSeconds(30))
        .build();
    metrics.watchDiscovery(() -> {
      Map<String, Long> byState = new TreeMap<>();
      for (DiscoveryDir.State st : DiscoveryDir.State.values()) {
        byState.put(st.name().toLowerCase(java.util.Locale.ROOT), 0L);
      }
      for (DiscoveryDir.Entry e : discovery.entries()) {
        byState.merge(e.state().name().toLowerCase(java.util.Locale.ROOT), 1L, Long::sum);
      }
      return byState;
    });
    try {
      discovery.start();
    } catch (IOException e) {
      throw new AgentException("discovery_dir " + config.discoveryDir() + " cannot be watched: "
          + e, e);
    }
  }

  /** Starts supervising a socket found in the discovery directory. Runs on the scheduler. */
  private DiscoveryDir.Handle superviseDiscovered(String id, PluginKind kind, Path socket) {
    ProbeSettings p = config.discoveryProbe();
    CsiPluginConfig cfg = CsiPluginConfig.builder(id, kind)
        .healthTimeout(p.healthTimeout())
        .probeInterval(p.probeInterval())
        .probeTimeout(p.probeTimeout())
        .initialBackoff(p.initialBackoff())
        .maxBackoff(p.maxBackoff())
        .externalSocket(socket)
        .build();
    CsiPluginSupervisorHook hook = supervisor.hook(
        new TaskContext(DISCOVERED_ALLOC_PREFIX + id, id), cfg,
        event -> onDiscoveredEvent(id, kind, event),
        reason -> log.warn("plugin={}: restart requested ({}), but a discovered plugin is not"
            + " the agent's to restart", id, reason));
    CsiPluginSupervisorHook previous = discovered.put(id, hook);
    if (previous != null) {
      previous.stop(StopRequest.because("replaced by a new socket"));
    }
    hook.poststart(PoststartRequest.of());
    return new DiscoveryDir.Handle() {
      @Override
      public void stop(String reason) {
        discovered.remove(id, hook);
        hook.stop(StopRequest.because(reason));
      }

      @Override
      public void detach(String reason) {
        discovered.remove(id, hook);
        hook.detach(reason);
      }
    };
  }

  private void onDiscoveredEvent(String id, PluginKind kind, TaskEvent event) {
    log.info("plugin={} type={} alloc={} event=\"{}\": {}", id, ConfigLoader.typeDir(kind),
        DISCOVERED_ALLOC_PREFIX + id, event.type(), event.message());
    if (TaskEvent.PLUGIN_HEALTHY.equals(event.type())) {
      metrics.healthTransition(id, true);
    } else if (TaskEvent.PLUGIN_UNHEALTHY.equals(event.type())) {
      metrics.healthTransition(id, false);
    }
    emit(new AgentEvent(event.time(), id, event.type(), event.message()));
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

  private Duration restoreGrace() {
    // A restored entry of a configured plugin that has not come back by the time its health
    // timeout would have restarted it is stale.
    Duration max = Duration.ofSeconds(30);
    if (config.discoveryProbe().healthTimeout().compareTo(max) > 0) {
      max = config.discoveryProbe().healthTimeout();
    }
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
        // Must not block (it runs on the supervisor's scheduler): queue the restart.
        reason -> scheduler.execute(() -> self.get().requestRestart(reason)));
    RotatingLog logFile = spec.launched()
        ? new RotatingLog(config.logDir().resolve(spec.id() + ".log"), config.logMaxBytes(),
            config.logMaxFiles())
        : null;
    PluginTask task = new PluginTask(spec, hook, scheduler, clock, records, logFile,
        config.shutdownGrace(), this::emit, metrics, artifacts, io, monitor);
    self.set(task);
    return task;
  }

  /**
   * Restored registrations of a configured plugin under a type it no longer has (a monolith
   * that is now a node plugin): its alloc id is still live, so reconcile keeps them; they go now,
   * not when the restore grace period ends.
   */
  private List<PluginEvent> dropTypesNoLongerServed() {
    List<PluginEvent> dropped = new ArrayList<>();
    for (PluginSpec spec : config.plugins()) {
      Set<PluginType> serves = spec.type() == PluginKind.MONOLITH
          ? Set.of(PluginType.CSI_CONTROLLER, PluginType.CSI_NODE)
          : Set.of(spec.type() == PluginKind.CONTROLLER ? PluginType.CSI_CONTROLLER
              : PluginType.CSI_NODE);
      for (PluginType t : PluginType.values()) {
        if (serves.contains(t)) {
          continue;
        }
        for (var info : registry.listAll(t)) {
          if (info.name().equals(spec.id()) && info.allocId().equals(spec.allocId())) {
            try {
              registry.deregister(t, info.name(), info.allocId()).ifPresent(dropped::add);
              log.info("plugin={}: dropped its restored {} registration: it is now a {} plugin",
                  spec.id(), typeName(t), ConfigLoader.typeDir(spec.type()));
            } catch (RuntimeException e) {
              log.warn("plugin={}: cannot drop its restored {} registration: {}", spec.id(),
                  typeName(t), e.toString());
            }
          }
        }
      }
    }
    return dropped;
  }

  /** The live process of a previous run for this task, if it is the same plugin. */
  private LaunchedProcess reattachable(PluginTask task, List<CompletableFuture<?>> terminating) {
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
    List<String> want = PluginTask.commandLine(spec, spec.artifact() == null ? null
        : artifacts.revisionDir(spec.id(), spec.artifact()));
    String socket = task.hook().socketPath().toString();
    if (!rec.get().commandLine().equals(want) || !rec.get().socket().equals(socket)) {
      log.info("plugin={}: its config changed since pid {} was launched; stopping that process",
          spec.id(), p.get().pid());
      terminating.add(p.get().terminate(config.shutdownGrace(), scheduler));
      return null;
    }
    return p.get();
  }

  private void stopUnconfiguredProcesses(List<CompletableFuture<?>> terminating) {
    for (ProcessRecord rec : records.all().values()) {
      if (config.plugin(rec.id()).filter(PluginSpec::launched).isPresent()) {
        continue;
      }
      LaunchedProcess.reattach(rec).ifPresent(p -> {
        log.info("plugin={} is no longer configured: stopping its process pid {}", rec.id(),
            p.pid());
        terminating.add(p.terminate(config.shutdownGrace(), scheduler));
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

  /**
   * Queues {@code event} for the listeners. Callers may hold locks (a plugin task's, a hook's):
   * the listeners run later on {@link #listenerExecutor}, so a listener may call back into the
   * agent (e.g. for the task status) without deadlocking.
   */
  private void emit(AgentEvent event) {
    ExecutorService executor = listenerExecutor;
    if (executor == null) {
      deliver(event);
      return;
    }
    try {
      executor.execute(() -> deliver(event));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      log.debug("agent closed: event not delivered to listeners: {}", event);
    }
  }

  private void deliver(AgentEvent event) {
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
          e.plugin().name(), typeName(e.type()), e.plugin().allocId(), e.plugin().version(),
          e.plugin().health().healthy(), e.sequence());
    }

    @Override
    public void onLagged(long lastDeliveredSequence) {
      log.warn("registry event log lagged after sequence {}", lastDeliveredSequence);
    }
  }

  /** A registry type in the config's words: {@code controller} or {@code node}. */
  public static String typeName(PluginType type) {
    return type == PluginType.CSI_CONTROLLER ? "controller" : "node";
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

  /** Every plugin task, in config order, then the discovered plugins by id. */
  public List<TaskStatus> tasks() {
    List<TaskStatus> out = new ArrayList<>();
    for (PluginTask t : tasks.values()) {
      out.add(t.status());
    }
    new TreeMap<>(discovered).forEach((id, hook) -> out.add(discoveredStatus(id, hook)));
    return out;
  }

  /** A configured or discovered plugin's task. */
  public Optional<TaskStatus> task(String id) {
    PluginTask t = tasks.get(id);
    if (t != null) {
      return Optional.of(t.status());
    }
    CsiPluginSupervisorHook h = discovered.get(id);
    return h == null ? Optional.empty() : Optional.of(discoveredStatus(id, h));
  }

  private static TaskStatus discoveredStatus(String id, CsiPluginSupervisorHook hook) {
    return new TaskStatus(id, hook.config().type(), hook.task().allocId(), false,
        TaskStatus.ProcessState.EXTERNAL, 0, 0, false, hook.phase(), hook.healthy(),
        hook.socketPath(), null, true, null, null, ResourceLimits.NONE, 0, List.of(), null,
        null);
  }

  /** The discovery directory's sockets, if there is one. */
  public List<DiscoveryDir.Entry> discoveredSockets() {
    DiscoveryDir d = discovery;
    return d == null ? List.of() : d.entries();
  }

  /** The config in effect: the one started with, or the last one {@link #reload}ed. */
  public AgentConfig currentConfig() {
    return current;
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
      b.addTasks(taskProto(t));
    }
    if (config.discoveryDir() != null) {
      b.setDiscoveryDir(config.discoveryDir().toString());
      for (DiscoveryDir.Entry e : discoveredSockets()) {
        b.addDiscoveredSockets(dev.csisupervisor.admin.v1.DiscoveredSocket.newBuilder()
            .setSocketPath(e.socket().toString())
            .setId(e.id())
            .setState(e.state().name().toLowerCase(java.util.Locale.ROOT))
            .setKind(e.kind() == null ? "" : ConfigLoader.typeDir(e.kind()))
            .setMessage(e.message()));
      }
    }
    return b.build();
  }

  /** The admin API's view of a task. */
  static dev.csisupervisor.admin.v1.TaskStatus taskProto(TaskStatus t) {
    var b = dev.csisupervisor.admin.v1.TaskStatus.newBuilder()
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
        // A log file that was never written (the process never started) is not shown.
        .setLogFile(t.logFile() == null || !Files.exists(t.logFile()) ? ""
            : t.logFile().toString())
        .setReattached(t.reattached())
        .setDiscovered(t.discovered())
        .setRevision(t.revision() == null ? "" : t.revision())
        .setArtifactError(t.artifactError() == null ? "" : t.artifactError())
        .setLastFailure(t.lastFailure() == null ? "" : t.lastFailure());
    if (t.lastFailureTime() != null) {
      b.setLastFailureTime(ProtoMapper.timestamp(t.lastFailureTime()));
    }
    if (t.launched() && (!t.resources().isEmpty() || t.limits().any())) {
      var usage = dev.csisupervisor.admin.v1.ResourceUsage.newBuilder()
          .setMaxMemoryBytes(t.limits().maxMemoryBytes())
          .setMaxCpuPercent(t.limits().maxCpuPercent())
          .setLimitRestarts(t.limitRestarts());
      t.latestResources().ifPresent(s -> usage.setLatest(sampleProto(s)));
      for (ResourceSample s : t.resources()) {
        usage.addHistory(sampleProto(s));
      }
      b.setResources(usage);
    }
    return b.build();
  }

  private static dev.csisupervisor.admin.v1.ResourceSample sampleProto(ResourceSample s) {
    return dev.csisupervisor.admin.v1.ResourceSample.newBuilder()
        .setTime(ProtoMapper.timestamp(s.time()))
        .setPid(s.pid())
        .setCpuPercent(s.cpuKnown() ? s.cpuPercent() : -1)
        .setMemoryBytes(s.memoryBytes())
        .build();
  }

  // ---- reload ------------------------------------------------------------------------------

  /**
   * Applies a new config's plugin list to the running agent: new plugins are started, removed
   * ones stopped (and deregistered), and changed ones updated. A change of only what a launched
   * plugin's process runs (command, args, env, artifact, resource limits) restarts its process
   * under the same supervision, so its registration is UPDATED; any other change (type, socket,
   * probe or restart settings) replaces the task (DEREGISTERED, then REGISTERED). Settings
   * outside {@code plugins} need a restart of the agent: they are reported and left as they are.
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
      Map<String, PluginTask> before = tasks;
      Map<String, PluginTask> after = new LinkedHashMap<>();
      List<PluginTask> toStart = new ArrayList<>();
      for (PluginSpec spec : next.plugins()) {
        PluginTask old = before.get(spec.id());
        if (old == null) {
          if (discovered.containsKey(spec.id())) {
            changes.add(spec.id() + ": not added: a discovered plugin has this id");
            continue;
          }
          PluginTask t = newTask(spec);
          after.put(spec.id(), t);
          CompletableFuture<Void> previous = stopping.get(spec.id());
          if (previous == null) {
            toStart.add(t);
          } else {
            // Removed by an earlier reload and still stopping: its process may hold the socket.
            startAfter(previous, t);
          }
          changes.add(spec.id() + ": added");
        } else if (old.spec().equals(spec)) {
          after.put(spec.id(), old);
        } else if (old.spec().sameSupervision(spec)) {
          boolean newRevision = spec.artifact() != null
              && !Objects.equals(old.spec().artifact(), spec.artifact());
          old.update(spec);
          after.put(spec.id(), old);
          changes.add(spec.id() + ": updated" + (newRevision ? " (new artifact revision "
              + spec.id() + "_" + spec.artifact().revision() + ")" : ""));
        } else {
          PluginTask t = newTask(spec);
          after.put(spec.id(), t);
          // Started once the old one is gone: its process may still hold the socket path.
          startAfter(old.stop("replaced by a new config"), t);
          changes.add(spec.id() + ": replaced (its type, socket, probe or restart settings"
              + " changed)");
        }
      }
      for (PluginTask old : before.values()) {
        if (!after.containsKey(old.spec().id())) {
          stopQuietly(old, "removed from the config");
          changes.add(old.spec().id() + ": removed");
        }
      }
      tasks = Collections.unmodifiableMap(after);
      current = config.withPlugins(List.copyOf(next.plugins().stream()
          .filter(p -> after.containsKey(p.id())).toList()));
      for (PluginTask t : toStart) {
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
  public List<String> reloadFromFile() throws dev.csisupervisor.agent.config.ConfigException {
    if (config.source() == null) {
      throw new IllegalStateException("the agent's config was not read from a file");
    }
    AgentConfig next = ConfigLoader.load(config.source());
    // Checked by the load above: the log: section, under the environment as at start-up.
    LogSettings logSettings = LogSettings.load(config.source()).overriddenBy(System.getenv());
    List<String> changes = new ArrayList<>(reload(next));
    List<String> logChanges = AgentLogging.apply(logSettings);
    logChanges.forEach(c -> log.info("reload: {}", c));
    changes.addAll(logChanges);
    return changes;
  }

  /** The admin API's {@code ReloadConfig}: what changed, or the file's problems. */
  private dev.csisupervisor.admin.v1.ReloadConfigResponse reloadForAdmin() {
    if (config.source() == null) {
      throw new IllegalStateException("the agent's config was not read from a file");
    }
    var b = dev.csisupervisor.admin.v1.ReloadConfigResponse.newBuilder()
        .setConfigFile(config.source().toString());
    try {
      b.addAllChanges(reloadFromFile()).setApplied(true);
    } catch (dev.csisupervisor.agent.config.ConfigException e) {
      log.error("reload: invalid config, nothing changed: {}", e.getMessage());
      b.setApplied(false).addAllProblems(e.problems());
    }
    return b.build();
  }

  private void stopQuietly(PluginTask t, String reason) {
    // A removed plugin's stop runs in the background: a reload does not wait for its grace. A
    // reload that adds it back starts the new task only once this one has stopped.
    String id = t.spec().id();
    CompletableFuture<Void> f = t.stop(reason);
    stopping.put(id, f);
    f.whenComplete((v, e) -> {
      stopping.remove(id, f);
      if (e != null) {
        log.warn("plugin={}: stop failed: {}", id, e.toString());
      }
    });
  }

  private void startAfter(CompletableFuture<Void> stopped, PluginTask t) {
    stopped.whenCompleteAsync((v, e) -> {
      try {
        t.start(null);
      } catch (IllegalStateException closed) {
        log.debug("plugin={}: not started, the agent stopped meanwhile", t.spec().id());
      }
    }, io);
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
    if (sampling != null) {
      sampling.cancel(false);
    }
    if (discovery != null) {
      discovery.close(config.leaveRunning());
    }
    if (config.leaveRunning()) {
      all.values().forEach(PluginTask::detach);
      // Stop supervision without deregistering: the registrations stay in the state file for
      // the next start to restore and confirm.
      shutdown(scheduler);
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
    if (listenerExecutor != null) {
      listenerExecutor.shutdown(); // events already queued are still delivered
    }
    if (io != null) {
      io.shutdownNow();
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
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw new AgentException(field + ": " + dir + " exists and is not a directory", null, true);
    }
    try {
      if (!Files.isDirectory(dir)) {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      }
    } catch (java.nio.file.FileAlreadyExistsException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: " + e.getFile()
          + " exists and is not a directory", e, true);
    } catch (java.nio.file.AccessDeniedException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: permission denied ("
          + e.getFile() + ")", e);
    } catch (IOException e) {
      throw new AgentException(field + ": " + dir + " cannot be created: " + e, e);
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
      this(message, null, false);
    }

    public AgentException(String message, Throwable cause) {
      this(message, cause, false);
    }

    public AgentException(String message, Throwable cause, boolean configError) {
      super(message, cause);
      this.configError = configError;
    }

    private final boolean configError;

    /** Whether the config is wrong (exit 2) rather than the machine (exit 1). */
    public boolean configError() {
      return configError;
    }
  }
}
