package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.common.CsiEndpoint;
import dev.csisupervisor.common.Durations;
import dev.csisupervisor.common.FileWatcher;
import dev.csisupervisor.common.SocketPaths;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The supervision state machine of one plugin task, in three named parts it wires together: {@link ProbeLoop}
 * (when the next probe goes out), {@link HealthDeadline} (when an unhealthy plugin is restarted) and
 * {@link RegistrationSync} (bringing the registry to what the hook wants). The hook itself decides what a
 * probe, a fingerprint or a passed deadline means. Every transition happens under {@link #lock};
 * RPCs are asynchronous and their completions hop back onto the shared scheduler, so no thread
 * ever waits on a plugin and there is no thread per plugin.
 *
 * <p>Registry writes (registrations, health updates, deregistrations) are durable commits: they
 * never run under {@link #lock} nor on the scheduler. The state machine only changes the
 * <em>desired</em> registrations ({@link #registered}) and asks {@link RegistrationSync} on the registry
 * executor to bring the registry there; its commit lock keeps one hook's writes in order.
 * Lock order: RegistrationSync's commit lock before {@code lock}, never the other way round. Task events and
 * lifecycle calls go through {@link #notifications}: in order, on the scheduler, outside every
 * lock.
 */
final class DefaultCsiPluginSupervisorHook implements CsiPluginSupervisorHook {
  private static final Logger log = LoggerFactory.getLogger(DefaultCsiPluginSupervisorHook.class);

  /** The failure kind of a registered plugin whose process the task runner is replacing. */
  private static final String REPLACING_PROCESS = "REPLACING_PROCESS";

  private final TaskContext task;
  private final CsiPluginConfig config;
  private final ScheduledExecutorService scheduler;
  private final RegistrationSync registrations;
  private final Clock clock;
  private final PluginConnection.Connector connector;
  private final FileWatcher watcher;
  private final TaskEventEmitter events;
  private final TaskLifecycle lifecycle;
  private final Path pluginDir;
  private final Path socket;
  /** Task events and restart requests: in order, on the scheduler, outside every lock. */
  private final SerialExecutor notifications;

  private final Object lock = new Object();
  // Everything below is guarded by lock.
  private Phase phase = Phase.NEW;
  private PluginConnection connection;
  private FileWatcher.Watch watch;
  /** When the next probe goes out. */
  private final ProbeLoop probes;
  /** Armed while the plugin is not healthy: when it fires, a restart is requested. */
  private final HealthDeadline healthDeadline;
  private boolean fingerprinting;
  /** The process or its socket was replaced: fingerprint again at the next ready probe. */
  private boolean refingerprint;
  private String lastError = "not probed yet";
  private boolean healthy;
  /** The {@link ProbeFailures#kind} that made a registered plugin unhealthy. */
  private String unhealthyKind = "";
  private boolean detached;
  /** The registrations this hook wants in the registry ({@link RegistrationSync} makes it so). */
  private final Map<PluginType, PluginInfo> registered = new LinkedHashMap<>();
  private long desiredVersion;
  /** The desired version whose commit a registration (phase REGISTERING, or a re-fingerprint) awaits; 0: none. */
  private long awaitedVersion;
  private Registration pending;

  /** A registration waiting for its commit. */
  private record Registration(PluginFingerprint fingerprint, Map<PluginType, PluginInfo> before,
      String skipped, boolean driverReplaced) {}

  DefaultCsiPluginSupervisorHook(TaskContext task, CsiPluginConfig config, SupervisorServices services,
      TaskEventEmitter events, TaskLifecycle lifecycle) {
    this.task = requireNonNull(task, "task");
    this.config = requireNonNull(config, "config");
    requireNonNull(services, "services");
    this.scheduler = services.scheduler();
    this.clock = services.clock();
    this.connector = services.connector();
    this.watcher = services.watcher();
    this.registrations = new RegistrationSync(services.registry(), services.registryExecutor(),
        config.pluginId(), task.allocId(), lock, new RegistrationSync.Owner() {
          @Override
          public RegistrationSync.Desired desired() {
            return detached ? null : new RegistrationSync.Desired(new LinkedHashMap<>(registered), desiredVersion);
          }

          @Override
          public void synced(long version, RuntimeException failure) {
            DefaultCsiPluginSupervisorHook.this.synced(version, failure);
          }
        });
    this.events = requireNonNull(events, "events");
    this.lifecycle = requireNonNull(lifecycle, "lifecycle");
    if (config.externalSocket() != null) {
      this.socket = config.externalSocket();
      this.pluginDir = socket.getParent();
    } else {
      this.pluginDir = PluginLayout.pluginDir(services.csiRoot(), config.type(), config.pluginId());
      this.socket = SocketPaths.checkLength("socket path",
          pluginDir.resolve(PluginLayout.SOCKET_FILE));
    }
    this.probes = new ProbeLoop(lock, config, services, new ProbeLoop.Host() {
      @Override
      public boolean busy() {
        return fingerprinting || awaitedVersion != 0;
      }

      @Override
      public boolean probing() {
        return phase == Phase.AWAITING_READY || phase == Phase.REGISTERED;
      }

      @Override
      public PluginConnection connection() {
        return connection;
      }

      @Override
      public void probed(PluginConnection conn, Boolean ready, Throwable error) {
        onProbe(conn, ready, error);
      }
    });
    this.notifications = new SerialExecutor(scheduler);
    this.healthDeadline = new HealthDeadline(scheduler, config.healthTimeout(), this::healthDeadlinePassed);
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
      if (!request.taskEnv().containsKey(CsiEndpoint.ENV)) {
        env.put(CsiEndpoint.ENV, CsiEndpoint.of(Path.of(config.mountDir(), PluginLayout.SOCKET_FILE)));
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
          // A restarted task: a new process, which gets a first start's fast path.
          log.info("plugin={} alloc={}: task restarted, probing the new process", config.pluginId(),
              task.allocId());
          processReplaced();
          probes.now();
          return;
        }
      }
      phase = Phase.AWAITING_READY;
      connection = connector.connect(socket, config.probeTimeout(), config.fingerprintTimeout());
      PluginConnection conn = connection;
      conn.onLost(() -> scheduler.execute(() -> connectionLost(conn)));
      // For the plugin's whole life: every (re)appearance of the socket is probed at once.
      watch = watcher.watchFile(socket, scheduler, this::socketAppeared);
      probes.restartBackoff(false);
      healthDeadline.arm();
      log.info("supervising plugin={} type={} alloc={} socket={}", config.pluginId(),
          config.type(), task.allocId(), socket);
      // Step 1: wait for ready — probe at once.
      probes.now();
    }
  }

  /** A new process behind the socket (restart, or the socket file re-created). */
  private void processReplaced() {
    boolean registered = phase == Phase.REGISTERED || phase == Phase.REGISTERING;
    probes.processReplaced(registered);
    if (registered) {
      refingerprint = true;
    }
    if (!(phase == Phase.REGISTERED && healthy)) {
      healthDeadline.arm(); // the new process gets a whole health timeout to become ready
    }
  }

  @Override
  public void replacingProcess(String reason) {
    requireNonNull(reason, "reason");
    synchronized (lock) {
      if (phase == Phase.REGISTERED && healthy) {
        markUnhealthy(reason); // commits on the registry executor; arms the liveness deadline
        unhealthyKind = REPLACING_PROCESS;
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
      detached = true;
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
    probes.cancel();
    healthDeadline.disarm();
    pending = null;
    awaitedVersion = 0;
    if (watch != null) {
      watch.cancel();
    }
  }

  /**
   * Ends supervision and deregisters. Returns once the deregistrations are durable; it waits for
   * them on the calling thread, holding no lock of the state machine, so probes and timers of
   * this and every other plugin go on meanwhile.
   */
  @Override
  public void stop(StopRequest request) {
    requireNonNull(request, "request");
    PluginConnection toClose;
    Phase was;
    synchronized (lock) {
      if (phase == Phase.STOPPED) {
        return;
      }
      was = phase;
      halt();
      registered.clear();
      desiredVersion++;
      toClose = connection;
      connection = null;
    }
    registrations.syncNow(); // the deregistrations, in order after any commit of this hook still running
    log.info("stopped supervising plugin={} alloc={} (was {}): {}", config.pluginId(),
        task.allocId(), was, request.reason());
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

  private void socketAppeared() {
    synchronized (lock) {
      if (phase == Phase.AWAITING_READY || phase == Phase.REGISTERING
          || phase == Phase.REGISTERED) {
        log.debug("plugin={}: socket (re)appeared, probing now", config.pluginId());
        // A process is starting right now: its readiness is a matter of milliseconds.
        processReplaced();
        probes.now();
      }
    }
  }

  /**
   * The plugin's end of the connection closed: its process most likely died (a kill -9 leaves an external
   * plugin's socket file in place, so the watch sees nothing). Probe now, and keep probing on the quick
   * backoff, so the death is reported at once and a restart found as fast as a socket that reappears.
   */
  private void connectionLost(PluginConnection conn) {
    synchronized (lock) {
      if (conn != connection || !(phase == Phase.AWAITING_READY || phase == Phase.REGISTERING
          || phase == Phase.REGISTERED)) {
        return;
      }
      log.debug("plugin={}: connection to {} lost, probing now", config.pluginId(), socket);
      probes.restartBackoff(phase == Phase.REGISTERED);
      probes.now();
    }
  }

  private void onProbe(PluginConnection conn, Boolean ready, Throwable error) {
    synchronized (lock) {
      if (conn != connection) {
        return; // stopped (or replaced) meanwhile: the result is stale
      }
      probes.answered();
      boolean ok = error == null && Boolean.TRUE.equals(ready);
      String problem = error != null ? ProbeFailures.describe(error) : (ok ? "" : "plugin reports not ready");
      switch (phase) {
        case AWAITING_READY -> {
          if (ok) {
            becameReady();
          } else {
            lastError = problem;
            probes.retry(true);
          }
        }
        case REGISTERED -> steadyProbe(ok, problem, ProbeFailures.kind(ok, error));
        default -> { }
      }
    }
  }

  /**
   * The plugin stayed unhealthy for the health timeout: not ready since its (re)start, or failing
   * probes since it was registered. Ask for a restart, and give the restarted process a fresh
   * deadline and backoff.
   */
  private void healthDeadlinePassed() {
    synchronized (lock) {
      healthDeadline.expired();
      if (phase == Phase.NEW || phase == Phase.STOPPED
          || (phase == Phase.REGISTERED && healthy)) {
        return;
      }
      String reason = phase == Phase.REGISTERED
          ? "unhealthy: failing probes for " + Durations.format(config.healthTimeout()) + " after registration"
              + " (last error: " + lastError + ")"
          : "unhealthy: did not become ready within " + Durations.format(config.healthTimeout())
              + " (last error: " + lastError + ")";
      log.warn("plugin={} alloc={}: {}; restarting task", config.pluginId(), task.allocId(),
          reason);
      if (phase != Phase.REGISTERED) {
        emit(TaskEvent.PLUGIN_UNHEALTHY, reason); // a registered one had its event on the transition
      }
      emit(TaskEvent.RESTART_REQUESTED, "restarting task: " + reason);
      // Keep supervising: the restarted task gets a fresh deadline and backoff.
      probes.restartBackoff(phase == Phase.REGISTERED);
      healthDeadline.arm();
      // Outside the lock: the task runner may call back into this hook (prestart, poststart).
      notifications.execute(() -> {
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
    fingerprinting = true;
    refingerprint = false;
    conn.fingerprint(config.type())
        .whenCompleteAsync((fp, error) -> onFingerprint(conn, fp, error), scheduler);
  }

  private void onFingerprint(PluginConnection conn, PluginFingerprint fp, Throwable error) {
    synchronized (lock) {
      if (conn != connection || (phase != Phase.REGISTERING && phase != Phase.REGISTERED)) {
        return;
      }
      fingerprinting = false;
      if (error != null) {
        fingerprintFailed(ProbeFailures.describe(error));
        return;
      }
      RegisteredTypes as = RegisteredTypes.of(config.pluginId(), config.type(), fp);
      if (as.refused() != null) {
        fingerprintFailed(as.refused());
        return;
      }
      Map<PluginType, PluginInfo> before = new LinkedHashMap<>(registered);
      boolean replaced = false;
      if (!before.isEmpty()) {
        Fingerprint old = before.values().iterator().next().fingerprint();
        if (!old.name().equals(fp.name())) {
          replaced = true;
          String message = "plugin " + config.pluginId() + ": driver " + old.name() + " "
              + old.vendorVersion() + " was replaced on " + socket + " by " + fp.name() + " "
              + fp.vendorVersion();
          log.warn("plugin={} alloc={}: {}", config.pluginId(), task.allocId(), message);
          emit(TaskEvent.DRIVER_REPLACED, message);
        }
      }
      PluginHealth health = new PluginHealth(true, "", clock.instant());
      registered.clear();
      for (PluginType type : as.types()) {
        registered.put(type, info(type, fp, health));
      }
      pending = new Registration(fp, before, as.skipped(), replaced);
      awaitedVersion = ++desiredVersion;
      registrations.request();
    }
  }

  /** Step 3b: the registration is durable. Called under lock. */
  private void registrationCommitted(Registration r) {
    boolean first = phase == Phase.REGISTERING;
    if (first) {
      phase = Phase.REGISTERED;
    }
    Set<PluginType> types = registered.keySet();
    boolean newBuild = !r.before().isEmpty()
        && (!r.before().keySet().equals(types) || !sameFingerprint(r.before(), r.fingerprint()));
    for (PluginType type : types) {
      if (!r.before().containsKey(type) || newBuild) {
        log.info("registered plugin={} type={} alloc={} version={}", config.pluginId(), type,
            task.allocId(), r.fingerprint().vendorVersion());
      }
    }
    // Health-only changes are reported as healthy/unhealthy events, not as a new registration.
    if (first || newBuild) {
      emit(TaskEvent.PLUGIN_REGISTERED, (first ? "registered " : "updated ")
          + config.pluginId() + " " + r.fingerprint().vendorVersion() + " as " + types);
    }
    if (r.skipped() != null && (first || newBuild)) {
      log.info("plugin={} alloc={}: {}", config.pluginId(), task.allocId(), r.skipped());
      emit(TaskEvent.PLUGIN_PARTIAL, r.skipped());
    }
    if (!first && !healthy) {
      log.info("plugin={} alloc={} is healthy again", config.pluginId(), task.allocId());
      emit(TaskEvent.PLUGIN_HEALTHY, "plugin " + config.pluginId() + " is healthy again");
    }
    healthy = true;
    lastError = "";
    probes.healthy();
    healthDeadline.disarm();
    if (refingerprint) {
      probes.now();
    } else {
      probes.steady();
    }
  }

  private static boolean sameFingerprint(Map<PluginType, PluginInfo> before, PluginFingerprint fp) {
    Fingerprint now = FingerprintMapping.toRegistry(fp);
    for (PluginInfo info : before.values()) {
      if (!info.fingerprint().equals(now)) {
        return false;
      }
    }
    return true;
  }

  private void fingerprintFailed(String problem) {
    log.warn("plugin={} alloc={}: {}", config.pluginId(), task.allocId(), problem);
    emit(TaskEvent.PLUGIN_FAILED, problem);
    lastError = problem;
    if (phase == Phase.REGISTERING) {
      phase = Phase.AWAITING_READY;
      probes.afterBackoff();
    } else {
      if (healthy) {
        markUnhealthy(problem);
        unhealthyKind = "FINGERPRINT_FAILED";
      }
      probes.retry(false);
    }
  }

  // Step 4: steady state — only Probe; report transitions.
  private void steadyProbe(boolean ok, String problem, String kind) {
    if (!ok) {
      lastError = problem;
      if (healthy) {
        markUnhealthy(problem);
        unhealthyKind = kind;
      } else if (!kind.equals(unhealthyKind)
          // While the runner replaces the process, nothing serving the socket is expected: the
          // registration keeps saying why (the replacement), not what that looks like.
          && !(unhealthyKind.equals(REPLACING_PROCESS) && kind.equals(ProbeFailures.NOTHING_SERVING))) {
        // Still unhealthy, for another kind of reason (a stale socket, then a server that is not
        // CSI): the registration says the current one. No task event: health did not change.
        unhealthyKind = kind;
        log.info("plugin={} alloc={} is still unhealthy, now: {}", config.pluginId(),
            task.allocId(), problem);
        PluginHealth health = new PluginHealth(false, problem, clock.instant());
        registered.replaceAll((type, info) -> info.withHealth(health));
        desiredVersion++;
        registrations.request();
      }
      probes.retry(false);
      return;
    }
    if (!healthy || refingerprint) {
      // Back from unhealthy, or a new process behind the socket: possibly a new build or even
      // another driver. It counts as healthy once re-fingerprinted and its registration updated.
      fingerprintAndRegister();
      return;
    }
    probes.steady();
  }

  private void markUnhealthy(String problem) {
    healthy = false;
    log.warn("plugin={} alloc={} is unhealthy: {}", config.pluginId(), task.allocId(), problem);
    emit(TaskEvent.PLUGIN_UNHEALTHY, "plugin " + config.pluginId() + " is unhealthy: " + problem);
    PluginHealth health = new PluginHealth(false, problem, clock.instant());
    registered.replaceAll((type, info) -> info.withHealth(health));
    desiredVersion++;
    registrations.request();
    // Liveness: unhealthy for the whole health timeout means a restart.
    healthDeadline.arm();
  }

  // ---- registry writes: off the scheduler, outside lock ------------------------------------

  /** A sync of desired version {@code version} finished. Called under lock (and RegistrationSync's commit lock). */
  private void synced(long version, RuntimeException failure) {
    if (phase == Phase.STOPPED) {
      return;
    }
    if (awaitedVersion == 0 || version < awaitedVersion) {
      if (failure != null && version == desiredVersion) {
        // A health update did not commit: try again at the next interval (the registry's
        // store stays usable, contract 4, so the cause may be gone by then).
        scheduler.schedule(registrations::request, config.probeInterval().toNanos(),
            TimeUnit.NANOSECONDS);
      }
      return;
    }
    Registration r = pending;
    pending = null;
    awaitedVersion = 0;
    if (failure == null) {
      registrationCommitted(r);
      return;
    }
    // Undo: back to what was registered before (nothing, for a first registration).
    registered.clear();
    registered.putAll(r.before());
    desiredVersion++;
    registrations.request();
    fingerprintFailed("registration failed: " + ProbeFailures.describe(failure));
  }

  private PluginInfo info(PluginType type, PluginFingerprint fp, PluginHealth health) {
    Map<String, String> options = new LinkedHashMap<>();
    options.put("provider", fp.name());
    options.put("mount_point", pluginDir.toString());
    if (config.externalSocket() == null) {
      options.put("container_mount_point", config.mountDir());
    }
    return new PluginInfo(type, config.pluginId(), fp.vendorVersion(), task.allocId(), socket,
        options, FingerprintMapping.toRegistry(fp), health, false);
  }

  // ---- helpers -----------------------------------------------------------------------------

  /** Queues a task event; it is delivered on the scheduler, outside every lock, in order. */
  private void emit(String type, String message) {
    TaskEvent event = new TaskEvent(type, message, clock.instant());
    notifications.execute(() -> {
      try {
        events.emit(event);
      } catch (RuntimeException e) {
        log.error("plugin={}: task event emitter threw", config.pluginId(), e);
      }
    });
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
