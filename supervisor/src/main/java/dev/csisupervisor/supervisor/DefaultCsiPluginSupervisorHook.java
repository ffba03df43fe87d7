package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginType;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The supervision state machine of one plugin task. It decides what a probe ({@link ProbeAnswer}), a fingerprint
 * or a passed deadline means; the named parts it wires together keep the rest: {@link ProbeLoop} (when the next
 * probe goes out), {@link HealthDeadline} and {@link HealthTracker} (when an unhealthy plugin is restarted, and
 * what its health says), {@link DesiredRegistrations} with {@link RegistrationSync} (what the hook wants
 * registered, and bringing the registry there), {@link RegistrationReport} and {@link TaskNotifications} (what the
 * task runner hears), {@link PluginTaskFiles} (the plugin's directory and socket) and {@link PluginLink} (the
 * connection and the socket watch). Every transition happens under {@link #lock}; RPCs are asynchronous and
 * their completions hop back onto the shared scheduler, so no thread ever waits on a plugin and there is no
 * thread per plugin.
 *
 * <p>Registry writes (registrations, health updates, deregistrations) are durable commits: they
 * never run under {@link #lock} nor on the scheduler. The state machine only changes the
 * <em>desired</em> registrations ({@link #desired}) and asks {@link RegistrationSync} on the registry
 * executor to bring the registry there; its commit lock keeps one hook's writes in order.
 * Lock order: RegistrationSync's commit lock before {@code lock}, never the other way round. Task events and
 * lifecycle calls go through {@link #notifications}: in order, on the scheduler, outside every lock.
 */
final class DefaultCsiPluginSupervisorHook implements CsiPluginSupervisorHook {
  private static final Logger log = LoggerFactory.getLogger(DefaultCsiPluginSupervisorHook.class);

  private final TaskContext task;
  private final CsiPluginConfig config;
  private final ScheduledExecutorService scheduler;
  private final RegistrationSync registrations;
  private final Clock clock;
  private final PluginTaskFiles files;
  /** Task events and restart requests: in order, on the scheduler, outside every lock. */
  private final TaskNotifications notifications;
  private final RegistrationReport report;

  private final Object lock = new Object();
  // Everything below is guarded by lock.
  private Phase phase = Phase.NEW;
  /** The connection and the socket watch, from the first poststart until supervision ends. */
  private final PluginLink link;
  /** When the next probe goes out. */
  private final ProbeLoop probes;
  /** Armed while the plugin is not healthy: when it fires, a restart is requested. */
  private final HealthDeadline healthDeadline;
  private boolean fingerprinting;
  /** The process or its socket was replaced: fingerprint again at the next ready probe. */
  private boolean refingerprint;
  private final HealthTracker health;
  /** The registrations this hook wants in the registry ({@link RegistrationSync} makes it so). */
  private final DesiredRegistrations desired;

  DefaultCsiPluginSupervisorHook(TaskContext task, CsiPluginConfig config, SupervisorServices services,
      TaskEventEmitter events, TaskLifecycle lifecycle) {
    this.task = requireNonNull(task, "task");
    this.config = requireNonNull(config, "config");
    requireNonNull(services, "services");
    this.scheduler = services.scheduler();
    this.clock = services.clock();
    this.files = new PluginTaskFiles(config, services.csiRoot());
    this.link = new PluginLink(files, config, services);
    this.desired = new DesiredRegistrations(config, task.allocId(), files, this::requestSync);
    this.registrations = new RegistrationSync(services.registry(), services.registryExecutor(),
        config.pluginId(), task.allocId(), lock, desired.owner(this::synced));
    this.probes = new ProbeLoop(lock, config, services, new ProbeLoop.Host() {
      @Override
      public boolean busy() {
        return fingerprinting || desired.awaiting();
      }

      @Override
      public boolean probing() {
        return phase == Phase.AWAITING_READY || phase == Phase.REGISTERED;
      }

      @Override
      public PluginConnection connection() {
        return link.connection();
      }

      @Override
      public void probed(PluginConnection conn, Boolean ready, Throwable error) {
        onProbe(conn, ready, error);
      }
    });
    this.notifications = new TaskNotifications(config.pluginId(), scheduler, clock,
        requireNonNull(events, "events"), requireNonNull(lifecycle, "lifecycle"));
    this.report = new RegistrationReport(config.pluginId(), task.allocId(), files.socket(), notifications);
    this.healthDeadline = new HealthDeadline(scheduler, config.healthTimeout(), this::healthDeadlinePassed);
    this.health = new HealthTracker(config, task.allocId(), clock, desired, notifications, healthDeadline);
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
    return files.prestart(request);
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
      link.open(this::connectionLost, this::socketAppeared);
      probes.restartBackoff(false);
      healthDeadline.arm();
      log.info("supervising plugin={} type={} alloc={} socket={}", config.pluginId(),
          config.type(), task.allocId(), files.socket());
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
    if (!(phase == Phase.REGISTERED && health.healthy())) {
      healthDeadline.arm(); // the new process gets a whole health timeout to become ready
    }
  }

  @Override
  public void replacingProcess(String reason) {
    requireNonNull(reason, "reason");
    synchronized (lock) {
      if (phase == Phase.REGISTERED && health.healthy()) {
        // Commits on the registry executor; arms the liveness deadline.
        health.unhealthy(reason, HealthTracker.REPLACING_PROCESS);
      }
    }
  }

  @Override
  public void detach(String reason) {
    requireNonNull(reason, "reason");
    Runnable closeConnection;
    synchronized (lock) {
      if (phase == Phase.STOPPED) {
        return;
      }
      log.info("detached from plugin={} alloc={} (was {}), registrations kept: {}",
          config.pluginId(), task.allocId(), phase, reason);
      desired.detach();
      closeConnection = halt();
    }
    closeConnection.run(); // outside the lock
  }

  /** Ends supervision: no timer, watch or RPC completion acts after this. Returns what closes the connection. */
  private Runnable halt() {
    phase = Phase.STOPPED;
    probes.cancel();
    healthDeadline.disarm();
    desired.stopAwaiting();
    return link.release();
  }

  /**
   * Ends supervision and deregisters. Returns once the deregistrations are durable; it waits for
   * them on the calling thread, holding no lock of the state machine, so probes and timers of
   * this and every other plugin go on meanwhile.
   */
  @Override
  public void stop(StopRequest request) {
    requireNonNull(request, "request");
    Runnable closeConnection;
    Phase was;
    synchronized (lock) {
      if (phase == Phase.STOPPED) {
        return;
      }
      was = phase;
      desired.clear();
      closeConnection = halt();
    }
    registrations.syncNow(); // the deregistrations, in order after any commit of this hook still running
    log.info("stopped supervising plugin={} alloc={} (was {}): {}", config.pluginId(),
        task.allocId(), was, request.reason());
    closeConnection.run(); // outside the lock
    files.removeLeftoverSocket();
  }

  // ---- supervision loop --------------------------------------------------------------------

  /** Started and not stopped: waiting for ready, registering or registered. */
  private boolean supervising() {
    return phase == Phase.AWAITING_READY || phase == Phase.REGISTERING || phase == Phase.REGISTERED;
  }

  private void socketAppeared() {
    synchronized (lock) {
      if (supervising()) {
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
      if (conn != link.connection() || !supervising()) {
        return;
      }
      log.debug("plugin={}: connection to {} lost, probing now", config.pluginId(), files.socket());
      probes.restartBackoff(phase == Phase.REGISTERED);
      probes.now();
    }
  }

  private void onProbe(PluginConnection conn, Boolean ready, Throwable error) {
    synchronized (lock) {
      if (conn != link.connection()) {
        return; // stopped (or replaced) meanwhile: the result is stale
      }
      probes.answered();
      ProbeAnswer answer = ProbeAnswer.of(ready, error);
      switch (phase) {
        case AWAITING_READY -> {
          if (answer.ok()) {
            becameReady();
          } else {
            health.lastError(answer.problem());
            probes.retry(true);
          }
        }
        case REGISTERED -> steadyProbe(answer);
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
          || (phase == Phase.REGISTERED && health.healthy())) {
        return;
      }
      health.deadlinePassed(phase == Phase.REGISTERED); // a restart requested, outside the lock
      // Keep supervising: the restarted task gets a fresh deadline and backoff.
      probes.restartBackoff(phase == Phase.REGISTERED);
      healthDeadline.arm();
    }
  }

  // Step 3: ready — fingerprint, then register.
  private void becameReady() {
    phase = Phase.REGISTERING;
    // The backoff is reset once registered, not here: a plugin that answers Probe but cannot be
    // fingerprinted or registered (a driver without a version, a full disk) is retried at the
    // growing backoff, not at the first step every time.
    health.lastError("");
    notifications.event(TaskEvent.PLUGIN_HEALTHY, "plugin " + config.pluginId() + " is ready");
    fingerprintAndRegister();
  }

  private void fingerprintAndRegister() {
    PluginConnection conn = link.connection();
    fingerprinting = true;
    refingerprint = false;
    conn.fingerprint(config.type())
        .whenCompleteAsync((fp, error) -> onFingerprint(conn, fp, error), scheduler);
  }

  private void onFingerprint(PluginConnection conn, PluginFingerprint fp, Throwable error) {
    synchronized (lock) {
      if (conn != link.connection() || (phase != Phase.REGISTERING && phase != Phase.REGISTERED)) {
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
      Optional<Fingerprint> old = desired.fingerprint().filter(f -> !f.name().equals(fp.name()));
      old.ifPresent(f -> report.driverReplaced(f, fp));
      desired.register(as, fp, new PluginHealth(true, "", clock.instant()), old.isPresent());
    }
  }

  /** Step 3b: the registration is durable. Called under lock. */
  private void registrationCommitted(DesiredRegistrations.Registration r) {
    boolean first = phase == Phase.REGISTERING;
    if (first) {
      phase = Phase.REGISTERED;
    }
    report.committed(r, desired.types(), first, desired.newBuild(r));
    health.registered(first);
    probes.healthy();
    if (refingerprint) {
      probes.now();
    } else {
      probes.steady();
    }
  }

  private void fingerprintFailed(String problem) {
    log.warn("plugin={} alloc={}: {}", config.pluginId(), task.allocId(), problem);
    notifications.event(TaskEvent.PLUGIN_FAILED, problem);
    health.lastError(problem);
    if (phase == Phase.REGISTERING) {
      phase = Phase.AWAITING_READY;
      probes.afterBackoff();
    } else {
      health.fingerprintFailed(problem);
      probes.retry(false);
    }
  }

  // Step 4: steady state — only Probe; report transitions.
  private void steadyProbe(ProbeAnswer answer) {
    if (!answer.ok()) {
      health.probeFailed(answer.problem(), answer.kind());
      probes.retry(false);
      return;
    }
    if (!health.healthy() || refingerprint) {
      // Back from unhealthy, or a new process behind the socket: possibly a new build or even
      // another driver. It counts as healthy once re-fingerprinted and its registration updated.
      fingerprintAndRegister();
      return;
    }
    probes.steady();
  }

  // ---- registry writes: off the scheduler, outside lock ------------------------------------

  /** Asks for a sync of what is desired now (on the registry executor). */
  private void requestSync() {
    registrations.request();
  }

  /** A sync of desired version {@code version} finished. Called under lock (and RegistrationSync's commit lock). */
  private void synced(long version, RuntimeException failure) {
    if (phase == Phase.STOPPED) {
      return;
    }
    DesiredRegistrations.Registration r = desired.completes(version);
    if (r == null) {
      if (failure != null && desired.isCurrent(version)) {
        // A health update did not commit: try again at the next interval (the registry's
        // store stays usable, contract 4, so the cause may be gone by then).
        scheduler.schedule(this::requestSync, config.probeInterval().toNanos(),
            TimeUnit.NANOSECONDS);
      }
      return;
    }
    if (failure == null) {
      registrationCommitted(r);
      return;
    }
    // Undo: back to what was registered before (nothing, for a first registration).
    desired.undo(r);
    fingerprintFailed("registration failed: " + ProbeFailures.describe(failure));
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
    return files.socket();
  }

  @Override
  public Set<PluginType> registeredTypes() {
    synchronized (lock) {
      return desired.types();
    }
  }

  @Override
  public boolean healthy() {
    synchronized (lock) {
      return health.healthy();
    }
  }
}
