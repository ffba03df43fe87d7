package dev.csisupervisor.agent;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.common.FileWatcher;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.TaskContext;
import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.tasks.process.RotatingLog;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's task runner: the configured plugins' tasks and the discovery directory's plugins, under one supervisor
 * whose socket watcher the discovery directory shares. {@link #start} re-attaches to the previous run's live
 * processes and launches the rest (the agent's steps 3 and 4), {@link #reload} swaps in a reload's tasks,
 * {@link #stop} stops them or leaves them running, {@link #close} ends the supervision. The task map is replaced,
 * never changed; the agent serializes reloads and close with its own lock.
 */
final class PluginTasks implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PluginTasks.class);

  private final AgentConfig config;
  private final Clock clock;
  private final AgentThreads threads;
  private final PluginEvents events;
  private final AgentMetrics metrics;
  private final ArtifactStore artifacts;
  private final ResourceMonitor monitor;
  /** Plugin sockets and the discovery directory: one inotify instance and thread for both. */
  private final FileWatcher fileWatcher;
  private final CsiPluginSupervisor supervisor;
  /** The plugin tasks in config order; replaced, never changed, by a reload. */
  private volatile Map<String, PluginTask> tasks = Map.of();
  private TaskServices taskServices;
  private volatile DiscoveredPlugins discovered;
  private TaskReload reloader;
  private ScheduledFuture<?> sampling;
  private ScheduledFuture<?> rotation;

  /** The supervisor over {@code registry}; nothing runs until {@link #start}. */
  PluginTasks(AgentConfig config, Clock clock, AgentThreads threads, PluginEvents events, AgentMetrics metrics,
      ArtifactStore artifacts, ResourceMonitor monitor, PluginRegistry registry) {
    this.config = config;
    this.clock = clock;
    this.threads = threads;
    this.events = events;
    this.metrics = metrics;
    this.artifacts = artifacts;
    this.monitor = monitor;
    this.fileWatcher = new FileWatcher();
    this.supervisor = CsiPluginSupervisor.builder().csiRoot(config.csiRoot()).registry(registry)
        .scheduler(threads.scheduler).clock(clock).probeObserver(this::probed)
        .fileWatcher(fileWatcher).build();
  }

  /**
   * Step 3: the plugin tasks — re-attaches to live processes, launches the rest; then samples their resources.
   * Step 4: the discovery directory's sockets.
   *
   * @return the alloc ids the discovery directory's plugins registered with
   * @throws AgentException if the process records or the discovery directory cannot be read
   */
  Set<String> start() throws AgentException {
    ProcessRecords records;
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

    discovered = new DiscoveredPlugins(config, supervisor, fileWatcher, taskServices, events);
    Set<String> live = new HashSet<>();
    if (config.discoveryDir() != null) {
      live.addAll(discovered.start(id -> tasks.containsKey(id)));
    }
    reloader = new TaskReload(this::newTask, discovered::has, threads.io);
    return live;
  }

  /** Rotates the launched plugins' logs every second. */
  void rotateLogsEverySecond() {
    rotation = threads.scheduler.scheduleWithFixedDelay(this::rotateLogs, 1, 1, TimeUnit.SECONDS);
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

  /**
   * Applies a new plugin list ({@link TaskReload}'s diff): the tasks it leaves are the task map from now on; the
   * caller starts {@link TaskReload.Result#toStart()}.
   */
  TaskReload.Result reload(List<PluginSpec> next) {
    TaskReload.Result r = reloader.apply(tasks, next);
    tasks = r.tasks();
    return r;
  }

  /** The configured plugins' tasks in config order, as now. */
  Map<String, PluginTask> tasks() {
    return tasks;
  }

  /** Every plugin task, in config order, then the discovered plugins by id. */
  List<TaskStatus> statuses() {
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
  Optional<TaskStatus> status(String id) {
    PluginTask t = tasks.get(id);
    if (t != null) {
      return Optional.of(t.status());
    }
    DiscoveredPlugins d = discovered;
    return d == null ? Optional.empty() : d.status(id);
  }

  /** The discovery directory's sockets, if there is one. */
  List<DiscoveryDir.Entry> discoveredSockets() {
    DiscoveredPlugins d = discovered;
    return d == null ? List.of() : d.entries();
  }

  /**
   * Why a mount for {@code id} is refused at once: the config in effect ({@code current}) does not name it, no plugin
   * of that id is registered and the discovery directory has not shown it; empty if it is known (a mount of it then
   * waits for it to be ready).
   */
  Optional<String> unknownPlugin(String id, AgentConfig current, PluginRegistry registry) {
    Set<String> known = new TreeSet<>();
    current.plugins().forEach(p -> known.add(p.id()));
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

  /** No more log rotation or resource sampling. */
  void cancelTimers() {
    if (rotation != null) {
      rotation.cancel(false);
    }
    if (sampling != null) {
      sampling.cancel(false);
    }
  }

  /**
   * Stops the discovered plugins and {@code all}: each task stopped (SIGTERM, then SIGKILL after the grace period)
   * and deregistered, waiting at most the grace period plus 5 s; or, with {@code leave_running}, detached with its
   * process and registration left for the next start.
   */
  void stop(Map<String, PluginTask> all) {
    if (discovered != null) {
      discovered.close(config.leaveRunning());
    }
    if (config.leaveRunning()) {
      all.values().forEach(PluginTask::detach);
      return;
    }
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

  /** Ends the supervision and the socket watcher. */
  @Override
  public void close() {
    Agent.closeQuietly(supervisor);
    Agent.closeQuietly(fileWatcher);
  }
}
