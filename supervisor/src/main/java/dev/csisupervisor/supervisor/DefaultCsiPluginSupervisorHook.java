package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The supervision state machine of one plugin task. Every transition happens under {@link #lock};
 * RPCs are asynchronous and their completions hop back onto the shared scheduler, so no thread
 * ever waits on a plugin and there is no thread per plugin.
 */
final class DefaultCsiPluginSupervisorHook implements CsiPluginSupervisorHook {
  private static final Logger log = LoggerFactory.getLogger(DefaultCsiPluginSupervisorHook.class);

  static final String CSI_ENDPOINT = "CSI_ENDPOINT";
  /**
   * A server creates its socket file at bind() and accepts only after listen(): a probe fired by
   * the file's appearance can be refused by a plugin that is a moment from ready. Retry it this
   * soon, this many times, before falling back to the backoff (which may be seconds by then).
   */
  static final Duration SOCKET_APPEARED_RETRY = Duration.ofMillis(5);
  static final int SOCKET_APPEARED_RETRIES = 10;
  static final String SOCKET_FILE = "csi.sock";

  private final TaskContext task;
  private final CsiPluginConfig config;
  private final PluginRegistry registry;
  private final ScheduledExecutorService scheduler;
  private final Executor registryExecutor;
  private final Clock clock;
  private final PluginConnection.Connector connector;
  private final SocketWatcher watcher;
  private final ProbeObserver probeObserver;
  private final LongSupplier nanoTicker;
  private final TaskEventEmitter events;
  private final TaskLifecycle lifecycle;
  private final Path pluginDir;
  private final Path socket;
  private final Backoff backoff;

  private final Object lock = new Object();
  // Everything below is guarded by lock.
  private Phase phase = Phase.NEW;
  private PluginConnection connection;
  private SocketWatcher.Watch watch;
  private ScheduledFuture<?> nextProbe;
  private ScheduledFuture<?> healthDeadline;
  private boolean probeInFlight;
  private boolean probeRequested;
  private int quickRetries;
  private String lastError = "not probed yet";
  private boolean healthy;
  private final Map<PluginType, PluginInfo> registered = new LinkedHashMap<>();

  DefaultCsiPluginSupervisorHook(
      TaskContext task,
      CsiPluginConfig config,
      Path csiRoot,
      PluginRegistry registry,
      ScheduledExecutorService scheduler,
      Executor registryExecutor,
      Clock clock,
      Random random,
      PluginConnection.Connector connector,
      SocketWatcher watcher,
      ProbeObserver probeObserver,
      LongSupplier nanoTicker,
      TaskEventEmitter events,
      TaskLifecycle lifecycle) {
    this.task = requireNonNull(task, "task");
    this.config = requireNonNull(config, "config");
    this.registry = requireNonNull(registry, "registry");
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.registryExecutor = requireNonNull(registryExecutor, "registryExecutor");
    this.clock = requireNonNull(clock, "clock");
    this.connector = requireNonNull(connector, "connector");
    this.watcher = requireNonNull(watcher, "watcher");
    this.probeObserver = requireNonNull(probeObserver, "probeObserver");
    this.nanoTicker = requireNonNull(nanoTicker, "nanoTicker");
    this.events = requireNonNull(events, "events");
    this.lifecycle = requireNonNull(lifecycle, "lifecycle");
    if (config.externalSocket() != null) {
      this.socket = config.externalSocket();
      this.pluginDir = socket.getParent();
    } else {
      this.pluginDir = csiRoot.resolve(typeDir(config.type())).resolve(config.pluginId());
      this.socket = pluginDir.resolve(SOCKET_FILE);
      Validation.checkSocketPath("socket path", socket);
    }
    this.backoff = new ExponentialBackoff(
        config.initialBackoff(), config.maxBackoff(), 2.0, 0.2, requireNonNull(random, "random"));
  }

  static String typeDir(PluginKind kind) {
    return switch (kind) {
      case CONTROLLER -> "controller";
      case NODE -> "node";
      case MONOLITH -> "monolith";
    };
  }

  // ---- task-runner calls -------------------------------------------------------------------

  @Override
  public PrestartResponse prestart(PrestartRequest request) throws IOException {
    requireNonNull(request, "request");
    synchronized (lock) {
      if (phase == Phase.STOPPED) {
        throw new IllegalStateException("plugin " + config.pluginId() + " hook is stopped");
      }
    }
    List<TaskMount> mounts = new ArrayList<>();
    Map<String, String> env = new LinkedHashMap<>();
    if (config.externalSocket() == null) {
      // Idempotent: a restarted task finds its directory in place.
      Files.createDirectories(pluginDir);
      Files.setPosixFilePermissions(pluginDir, PosixFilePermissions.fromString("rwx------"));
      mounts.add(new TaskMount(pluginDir, config.mountDir(), TaskMount.Propagation.BIDIRECTIONAL,
          false));
      mounts.add(new TaskMount(Path.of("/dev"), "/dev", TaskMount.Propagation.HOST_TO_TASK, false));
      if (!request.taskEnv().containsKey(CSI_ENDPOINT)) {
        env.put(CSI_ENDPOINT, "unix://" + config.mountDir().replaceAll("/+$", "") + "/"
            + SOCKET_FILE);
      }
    }
    return new PrestartResponse(mounts, env);
  }

  @Override
  public void poststart(PoststartRequest request) {
    requireNonNull(request, "request");
    synchronized (lock) {
      switch (phase) {
        case NEW -> { }
        case STOPPED -> throw new IllegalStateException(
            "plugin " + config.pluginId() + " hook is stopped; poststart after stop");
        default -> {
          // A restarted task: supervision already runs and will see the new process.
          log.debug("poststart again for plugin={} alloc={}: supervision already running",
              config.pluginId(), task.allocId());
          return;
        }
      }
      phase = Phase.AWAITING_READY;
      connection = connector.connect(socket, config.probeTimeout());
      if (pluginDir != null && Files.isDirectory(pluginDir)) {
        watch = watcher.watch(pluginDir, socket.getFileName().toString(), this::socketAppeared);
      }
      startWaitingForReady();
      log.info("supervising plugin={} type={} alloc={} socket={}", config.pluginId(),
          config.type(), task.allocId(), socket);
      // Step 1: wait for ready — probe at once.
      probeLocked();
    }
  }

  @Override
  public void replacingProcess(String reason) {
    requireNonNull(reason, "reason");
    synchronized (lock) {
      if (phase == Phase.REGISTERED && healthy) {
        markUnhealthy(reason);
      }
    }
  }

  @Override
  public void detach(String reason) {
    requireNonNull(reason, "reason");
    PluginConnection toClose;
    synchronized (lock) {
      if (phase == Phase.STOPPED) {
        return;
      }
      log.info("detached from plugin={} alloc={} (was {}), registrations kept: {}",
          config.pluginId(), task.allocId(), phase, reason);
      halt();
      registered.clear();
      toClose = connection;
      connection = null;
    }
    if (toClose != null) {
      toClose.close();
    }
  }

  /** Ends supervision: no timer, watch or RPC completion acts after this. */
  private void halt() {
    phase = Phase.STOPPED;
    cancel(nextProbe);
    cancel(healthDeadline);
    if (watch != null) {
      watch.cancel();
    }
  }

  @Override
  public void stop(StopRequest request) {
    requireNonNull(request, "request");
    PluginConnection toClose;
    synchronized (lock) {
      if (phase == Phase.STOPPED) {
        return;
      }
      Phase was = phase;
      halt();
      List<PluginType> types = new ArrayList<>(registered.keySet());
      Collections.reverse(types);
      for (PluginType type : types) {
        try {
          registry.deregister(type, config.pluginId(), task.allocId());
        } catch (RuntimeException e) {
          log.error("plugin={} alloc={}: deregistering {} failed", config.pluginId(),
              task.allocId(), type, e);
        }
      }
      registered.clear();
      toClose = connection;
      connection = null;
      log.info("stopped supervising plugin={} alloc={} (was {}): {}", config.pluginId(),
          task.allocId(), was, request.reason());
    }
    if (toClose != null) {
      toClose.close();
    }
    removeLeftoverSocket();
  }

  private void removeLeftoverSocket() {
    if (config.externalSocket() != null) {
      return;
    }
    try {
      if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS)
          && !Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS)) {
        Files.delete(socket);
        log.info("plugin={} left its socket behind; removed {}", config.pluginId(), socket);
      }
    } catch (IOException e) {
      log.warn("plugin={}: could not remove leftover socket {}", config.pluginId(), socket, e);
    }
  }

  // ---- supervision loop --------------------------------------------------------------------

  private void startWaitingForReady() {
    backoff.reset();
    cancel(healthDeadline);
    Duration timeout = config.healthTimeout();
    if (!timeout.isZero()) {
      healthDeadline = scheduler.schedule(this::healthDeadlinePassed, timeout.toNanos(),
          TimeUnit.NANOSECONDS);
    }
  }

  private void socketAppeared() {
    synchronized (lock) {
      if (phase == Phase.AWAITING_READY) {
        log.debug("plugin={}: socket appeared, probing now", config.pluginId());
        // The plugin is starting right now: its readiness is a matter of milliseconds.
        backoff.reset();
        quickRetries = SOCKET_APPEARED_RETRIES;
        probeLocked();
      } else if (phase == Phase.REGISTERED && !healthy) {
        // A replacement process (a restart, a new config) just bound its socket: see it now,
        // not a whole probe interval later.
        log.debug("plugin={}: socket appeared while unhealthy, probing now", config.pluginId());
        probeLocked();
      }
    }
  }

  /** Starts a probe now, or asks for another as soon as the one in flight completes. */
  private void probeLocked() {
    if (probeInFlight) {
      probeRequested = true;
      return;
    }
    cancel(nextProbe);
    nextProbe = null;
    probeInFlight = true;
    probeRequested = false;
    PluginConnection conn = connection;
    long sent = nanoTicker.getAsLong();
    conn.probe().whenCompleteAsync((ready, error) -> {
      observe(Duration.ofNanos(nanoTicker.getAsLong() - sent), ready, error);
      onProbe(conn, ready, error);
    }, scheduler);
  }

  private void scheduleProbe(Duration delay) {
    cancel(nextProbe);
    nextProbe = scheduler.schedule(() -> {
      synchronized (lock) {
        if (phase == Phase.AWAITING_READY || phase == Phase.REGISTERED) {
          probeLocked();
        }
      }
    }, delay.toNanos(), TimeUnit.NANOSECONDS);
  }

  private void observe(Duration latency, Boolean ready, Throwable error) {
    try {
      probeObserver.probed(config.pluginId(), latency, Boolean.TRUE.equals(ready),
          error == null ? "" : describe(error));
    } catch (RuntimeException e) {
      log.warn("plugin={}: probe observer threw", config.pluginId(), e);
    }
  }

  private void onProbe(PluginConnection conn, Boolean ready, Throwable error) {
    synchronized (lock) {
      if (conn != connection) {
        return; // stopped (or replaced) meanwhile: the result is stale
      }
      probeInFlight = false;
      boolean ok = error == null && Boolean.TRUE.equals(ready);
      String problem = error != null ? describe(error) : (ok ? "" : "plugin reports not ready");
      switch (phase) {
        case AWAITING_READY -> {
          if (ok) {
            becameReady();
          } else {
            lastError = problem;
            if (probeRequested) {
              probeLocked();
            } else if (quickRetries > 0) {
              quickRetries--;
              scheduleProbe(SOCKET_APPEARED_RETRY);
            } else {
              scheduleProbe(backoff.next());
            }
          }
        }
        case REGISTERED -> steadyProbe(ok, problem);
        default -> { }
      }
    }
  }

  private void healthDeadlinePassed() {
    synchronized (lock) {
      if (phase != Phase.AWAITING_READY && phase != Phase.REGISTERING) {
        return;
      }
      String reason = "unhealthy: did not become ready within " + human(config.healthTimeout())
          + " (last error: " + lastError + ")";
      log.warn("plugin={} alloc={}: {}; restarting task", config.pluginId(), task.allocId(),
          reason);
      emit(TaskEvent.PLUGIN_UNHEALTHY, reason);
      emit(TaskEvent.RESTART_REQUESTED, "restarting task: " + reason);
      // Keep supervising: the restarted task gets a fresh deadline and backoff.
      startWaitingForReady();
      // Outside the lock: the task runner may call back into this hook (prestart, poststart).
      scheduler.execute(() -> {
        try {
          lifecycle.restart(reason);
        } catch (RuntimeException e) {
          log.error("plugin={}: task restart request failed", config.pluginId(), e);
        }
      });
    }
  }

  // Step 3: ready — fingerprint, then register.
  private void becameReady() {
    phase = Phase.REGISTERING;
    // The backoff is reset once registered, not here: a plugin that answers Probe but cannot be
    // fingerprinted or registered (a driver without a version, a full disk) is retried at the
    // growing backoff, not at the first step every time.
    lastError = "";
    emit(TaskEvent.PLUGIN_HEALTHY, "plugin " + config.pluginId() + " is ready");
    fingerprintAndRegister();
  }

  private void fingerprintAndRegister() {
    PluginConnection conn = connection;
    // Registering is a durable commit (milliseconds on a busy disk): it runs on the registry
    // executor, so that the scheduler keeps probing every other plugin meanwhile and concurrent
    // registrations of several plugins can share one group commit.
    conn.fingerprint(config.type())
        .whenCompleteAsync((fp, error) -> onFingerprint(conn, fp, error), registryExecutor);
  }

  private void onFingerprint(PluginConnection conn, PluginFingerprint fp, Throwable error) {
    synchronized (lock) {
      if (conn != connection || (phase != Phase.REGISTERING && phase != Phase.REGISTERED)) {
        return;
      }
      if (error != null) {
        fingerprintFailed(describe(error));
        return;
      }
      try {
        registerAll(fp);
      } catch (RuntimeException e) {
        fingerprintFailed("registration failed: " + e.getMessage());
        return;
      }
      if (phase == Phase.REGISTERING) {
        phase = Phase.REGISTERED;
        backoff.reset();
        cancel(healthDeadline);
        healthDeadline = null;
      } else if (!healthy) {
        log.info("plugin={} alloc={} is healthy again", config.pluginId(), task.allocId());
        emit(TaskEvent.PLUGIN_HEALTHY, "plugin " + config.pluginId() + " is healthy again");
      }
      healthy = true;
      scheduleProbe(config.probeInterval());
    }
  }

  private void fingerprintFailed(String problem) {
    log.warn("plugin={} alloc={}: {}", config.pluginId(), task.allocId(), problem);
    emit(TaskEvent.PLUGIN_FAILED, problem);
    lastError = problem;
    if (phase == Phase.REGISTERING) {
      phase = Phase.AWAITING_READY;
      scheduleProbe(backoff.next());
    } else {
      if (healthy) {
        markUnhealthy(problem);
      }
      scheduleProbe(config.probeInterval());
    }
  }

  /** Registers one entry per type; for a monolith, a failure of the second undoes the first. */
  private void registerAll(PluginFingerprint fp) {
    PluginHealth health = new PluginHealth(true, "", clock.instant());
    Map<PluginType, PluginInfo> done = new LinkedHashMap<>();
    boolean newBuild = false;
    try {
      for (PluginType type : registryTypes(config.type())) {
        PluginInfo info = info(type, fp, health);
        boolean changed = registry.register(info).isPresent();
        done.put(type, info);
        PluginInfo before = registered.get(type);
        newBuild |= before != null && !before.fingerprint().equals(info.fingerprint());
        if (changed) {
          log.info("registered plugin={} type={} alloc={} version={}", config.pluginId(), type,
              task.allocId(), info.version());
        }
      }
    } catch (RuntimeException e) {
      for (PluginType type : done.keySet()) {
        if (!registered.containsKey(type)) {
          try {
            registry.deregister(type, config.pluginId(), task.allocId());
          } catch (RuntimeException rollback) {
            e.addSuppressed(rollback);
          }
        }
      }
      throw e;
    }
    boolean first = registered.isEmpty();
    registered.putAll(done);
    // Health-only changes are reported as healthy/unhealthy events, not as a new registration.
    if (first || newBuild) {
      emit(TaskEvent.PLUGIN_REGISTERED, (first ? "registered " : "updated ")
          + config.pluginId() + " " + fp.vendorVersion() + " as " + done.keySet());
    }
  }

  // Step 4: steady state — report transitions only.
  private void steadyProbe(boolean ok, String problem) {
    if (!ok) {
      if (healthy) {
        markUnhealthy(problem);
      }
      scheduleProbe(config.probeInterval());
      return;
    }
    if (!healthy) {
      // Back from unhealthy: most likely a restarted process, possibly a new build. It counts
      // as healthy once re-fingerprinted and its registration updated.
      fingerprintAndRegister();
      return;
    }
    PluginConnection conn = connection;
    conn.vendorVersion().whenCompleteAsync((version, error) -> {
      synchronized (lock) {
        if (conn != connection || phase != Phase.REGISTERED) {
          return;
        }
        String current = registered.values().iterator().next().version();
        if (error == null && !current.equals(version)) {
          log.info("plugin={} changed version {} -> {}: re-fingerprinting", config.pluginId(),
              current, version);
          fingerprintAndRegister();
        } else {
          scheduleProbe(config.probeInterval());
        }
      }
    }, scheduler);
  }

  private void markUnhealthy(String problem) {
    healthy = false;
    log.warn("plugin={} alloc={} is unhealthy: {}", config.pluginId(), task.allocId(), problem);
    emit(TaskEvent.PLUGIN_UNHEALTHY, "plugin " + config.pluginId() + " is unhealthy: " + problem);
    PluginHealth health = new PluginHealth(false, problem, clock.instant());
    for (Map.Entry<PluginType, PluginInfo> e : registered.entrySet()) {
      PluginInfo updated = e.getValue().withHealth(health);
      try {
        registry.register(updated);
        e.setValue(updated);
      } catch (RuntimeException ex) {
        log.error("plugin={}: recording unhealthy state for {} failed", config.pluginId(),
            e.getKey(), ex);
      }
    }
  }

  private PluginInfo info(PluginType type, PluginFingerprint fp, PluginHealth health) {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("provider", fp.name());
    options.put("mount_point", pluginDir.toString());
    if (config.externalSocket() == null) {
      options.put("container_mount_point", config.mountDir());
    }
    return new PluginInfo(type, config.pluginId(), fp.vendorVersion(), task.allocId(), socket,
        options, toRegistry(fp), health, false);
  }

  static Fingerprint toRegistry(PluginFingerprint fp) {
    return new Fingerprint(fp.name(), fp.vendorVersion(), fp.manifest(), fp.pluginCapabilities(),
        fp.controllerCapabilities(), fp.nodeCapabilities(), fp.nodeId(), fp.maxVolumesPerNode(),
        fp.accessibleTopology());
  }

  static Set<PluginType> registryTypes(PluginKind kind) {
    return switch (kind) {
      case CONTROLLER -> EnumSet.of(PluginType.CSI_CONTROLLER);
      case NODE -> EnumSet.of(PluginType.CSI_NODE);
      case MONOLITH -> EnumSet.of(PluginType.CSI_CONTROLLER, PluginType.CSI_NODE);
    };
  }

  // ---- helpers -----------------------------------------------------------------------------

  private void emit(String type, String message) {
    try {
      events.emit(new TaskEvent(type, message, clock.instant()));
    } catch (RuntimeException e) {
      log.error("plugin={}: task event emitter threw", config.pluginId(), e);
    }
  }

  private static void cancel(ScheduledFuture<?> f) {
    if (f != null) {
      f.cancel(false);
    }
  }

  static String describe(Throwable error) {
    Throwable t = error;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
  }

  static String human(Duration d) {
    if (d.toMillis() % 1000 != 0) {
      return d.toMillis() + "ms";
    }
    long s = d.toSeconds();
    return s % 60 == 0 && s > 0 ? (s / 60) + "m" : s + "s";
  }

  // ---- observers ---------------------------------------------------------------------------

  @Override
  public Phase phase() {
    synchronized (lock) {
      return phase;
    }
  }

  @Override
  public CsiPluginConfig config() {
    return config;
  }

  @Override
  public TaskContext task() {
    return task;
  }

  @Override
  public Path socketPath() {
    return socket;
  }

  @Override
  public Set<PluginType> registeredTypes() {
    synchronized (lock) {
      return registered.isEmpty() ? Set.of() : Set.copyOf(registered.keySet());
    }
  }

  @Override
  public boolean healthy() {
    synchronized (lock) {
      return healthy;
    }
  }
}
