package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.tasks.artifact.ArtifactException;
import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.tasks.artifact.Revision;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.Interpolation;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import dev.csisupervisor.tasks.resources.ResourceSample;
import dev.csisupervisor.tasks.process.ExitReason;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.tasks.process.RestartTracker;
import dev.csisupervisor.tasks.process.RotatingLog;
import dev.csisupervisor.common.Durations;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.PrestartResponse;
import dev.csisupervisor.supervisor.StopRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's task runner for one configured plugin: the agent plays a scheduler's part here.
 *
 * <p>For a launched plugin: prestart (the hook makes the socket directory) → start the process
 * with {@code CSI_ENDPOINT} → record it → poststart (supervision starts). When the process exits,
 * the restart tracker decides: start again after a delay (prestart and poststart again; the hook
 * keeps supervising and sees the new process), or give up. A health-timeout restart request from
 * the hook stops the process (SIGTERM, then SIGKILL after the grace period) and the exit goes
 * through the same path. For a socket-only plugin there is no process: poststart and stop only.
 *
 * <p><b>Artifacts.</b> A plugin with an artifact first has it fetched ({@link ArtifactStore}):
 * the process is launched from the revision only once it is verified and installed; if it cannot
 * be, the task is {@link ProcessState#FAILED} with an {@link AgentEvent#ARTIFACT_FAILED} event.
 * {@link #update} with a changed artifact fetches the new revision while the old process keeps
 * running, then stops it and launches the new one under the same supervision hook, so the
 * registration is updated, not replaced; if the new revision cannot be fetched, the old process
 * keeps running. Older revisions are removed once a probe sent after the launch finds the new
 * process ready. The revisions' bookkeeping is {@link ArtifactRevisions}'; what the process runs,
 * {@link LaunchCommand}'s.
 *
 * <p><b>Resources.</b> The process is sampled by the agent's {@link ResourceMonitor}; a plugin
 * that stays over a limit is stopped and goes through the restart path.
 *
 * <p>Thread-safe: every transition happens under {@link #lock}; exits and timers hop onto the
 * agent's scheduler. Nothing here blocks on a process.
 */
final class PluginTask {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);

  private final CsiPluginSupervisorHook hook;
  private final RotatingLog logFile;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final ProcessRecords records;
  private final Duration grace;
  private final Consumer<AgentEvent> events;
  private final AgentMetrics metrics;
  private final ResourceMonitor monitor;
  private final RestartTracker tracker;

  private final Object lock = new Object();
  // Written under lock; volatile so that id, type and kind (which an update never changes) can
  // be read without it.
  private volatile PluginSpec spec;
  // Guarded by lock.
  private ProcessState state = ProcessState.NEW;
  private LaunchedProcess process;
  private ScheduledFuture<?> pendingStart;
  private boolean restartRequested;
  private int restarts;
  private int limitRestarts;
  private CompletableFuture<Void> stopped;
  /** The process is being stopped to launch a new revision or command: no restart policy. */
  private boolean swapping;
  /** Which revision to launch, which one runs, the fetch in flight. */
  private final ArtifactRevisions artifact;
  /** Why the process last failed to start or exited on its own, and when; null if never. */
  private String lastFailure;
  private java.time.Instant lastFailureTime;
  /** The current process's pid, for the sampler, without taking the lock. */
  private volatile long currentPid;

  /**
   * A task for {@code spec}, not started.
   *
   * @param hook the supervisor hook of this plugin
   * @param logFile where a launched plugin's output goes; null for a socket-only plugin
   * @param services what the agent's tasks share
   */
  PluginTask(PluginSpec spec, CsiPluginSupervisorHook hook, RotatingLog logFile,
      TaskServices services) {
    this.spec = requireNonNull(spec, "spec");
    this.hook = requireNonNull(hook, "hook");
    this.logFile = logFile;
    this.scheduler = services.scheduler();
    this.clock = services.clock();
    this.records = services.records();
    this.grace = services.grace();
    this.events = services.events();
    this.metrics = services.metrics();
    this.monitor = services.monitor();
    this.artifact = new ArtifactRevisions(spec.id(), services.artifacts(), scheduler,
        services.io(), lock);
    this.tracker = new RestartTracker(spec.restart());
    if (spec.launched()) {
      requireNonNull(logFile, "logFile");
      if (monitor != null) {
        monitor.track(spec.id(), () -> currentPid, spec.limits(), this::limitExceeded);
      }
    } else {
      state = ProcessState.EXTERNAL;
    }
  }

  PluginSpec spec() {
    return spec;
  }

  CsiPluginSupervisorHook hook() {
    return hook;
  }

  /** The full command line a launched plugin runs (see {@link LaunchCommand}). */
  static List<String> commandLine(PluginSpec spec, Path revisionDir) {
    return LaunchCommand.of(spec, revisionDir);
  }

  // ---- start -------------------------------------------------------------------------------

  /**
   * Starts the task: re-attaches to {@code reattach} if given (a process from before an agent
   * restart), else launches the process; then starts supervision.
   */
  void start(LaunchedProcess reattach) {
    synchronized (lock) {
      if (state != ProcessState.NEW && state != ProcessState.EXTERNAL) {
        throw new IllegalStateException("task " + spec.id() + " already started: " + state);
      }
      if (!spec.launched()) {
        emit(AgentEvent.SUPERVISING, "supervising external plugin at " + spec.socket());
        hook.poststart(PoststartRequest.of());
        return;
      }
      if (reattach != null) {
        if (spec.artifact() != null) {
          artifact.reattached(spec.artifact());
        }
        try {
          hook.prestart(PrestartRequest.withEnv(spec.env()));
        } catch (IOException | RuntimeException e) {
          log.warn("plugin={} alloc={}: prestart for re-attached pid {} failed: {}", spec.id(),
              spec.allocId(), reattach.pid(), e.toString());
        }
        adopt(reattach);
        emit(AgentEvent.PROCESS_REATTACHED, "re-attached to running " + reattach);
        log.info("plugin={} type={} alloc={}: re-attached to running pid {}", spec.id(),
            kind(), spec.allocId(), reattach.pid());
        hook.poststart(new PoststartRequest(reattach.pid()));
        return;
      }
      launchLocked();
    }
  }

  private void launchLocked() {
    pendingStart = null;
    if (spec.artifact() != null && !artifact.isCurrent(spec.artifact())) {
      fetchLocked(false);
      return;
    }
    state = ProcessState.STARTING;
    Map<String, String> env = new LinkedHashMap<>(spec.env());
    try {
      PrestartResponse pre = hook.prestart(PrestartRequest.withEnv(spec.env()));
      env.putAll(pre.env());
    } catch (IOException | RuntimeException e) {
      failedToStart("prestart failed: " + e.getMessage());
      return;
    }
    // The plugin runs on the host, not in a container: its endpoint is the host path. The
    // same variables its command line was interpolated with (see Interpolation).
    env.putAll(Interpolation.agentVariables(spec.id(), hook.socketPath()));
    removeStaleSocket();
    List<String> argv = commandLine(spec, artifact.launchDir());
    LaunchedProcess p;
    try {
      p = LaunchedProcess.launch(argv, env, logFile.file());
    } catch (IOException | RuntimeException e) {
      failedToStart(e.getMessage());
      return;
    }
    adopt(p);
    artifact.launched();
    log.info("plugin={} type={} alloc={}: started pid {} ({}), log {}", spec.id(), kind(),
        spec.allocId(), p.pid(), argv.get(0), logFile.file());
    emit(AgentEvent.PROCESS_STARTED, "started pid " + p.pid());
    hook.poststart(new PoststartRequest(p.pid()));
  }

  private void adopt(LaunchedProcess p) {
    process = p;
    currentPid = p.pid();
    artifact.processStarted();
    state = ProcessState.RUNNING;
    try {
      records.put(p.record(spec.id(), hook.socketPath()));
    } catch (IOException e) {
      // Only re-attaching after an agent crash depends on the record; the plugin runs anyway.
      log.error("plugin={}: cannot record pid {} in {}: {}", spec.id(), p.pid(), records.file(),
          e.toString());
    }
    p.onExit().whenCompleteAsync((code, error) -> exited(p, code == null ? -1 : code),
        scheduler);
  }

  /** The plugin dir is the agent's: a socket left by a dead process would stop the new one. */
  private void removeStaleSocket() {
    Path socket = hook.socketPath();
    try {
      if (Files.exists(socket, LinkOption.NOFOLLOW_LINKS)
          && !Files.isDirectory(socket, LinkOption.NOFOLLOW_LINKS)) {
        Files.delete(socket);
      }
    } catch (IOException e) {
      log.warn("plugin={}: cannot remove stale socket {}: {}", spec.id(), socket, e.toString());
    }
  }

  private void failedToStart(String reason) {
    log.error("plugin={} type={} alloc={}: cannot start: {}", spec.id(), kind(),
        spec.allocId(), reason);
    failed(reason);
    emit(AgentEvent.START_FAILED, reason);
    process = null;
    decideRestart("failed to start: " + reason);
  }

  /** Keeps {@code reason} as the last failure, shown by status until a later one. */
  private void failed(String reason) {
    lastFailure = reason;
    lastFailureTime = clock.instant();
  }

  // ---- artifact ----------------------------------------------------------------------------

  /**
   * Makes the spec's artifact ready, then launches it; {@code whileRunning}: the current
   * process keeps running until then (an update).
   */
  private void fetchLocked(boolean whileRunning) {
    if (!whileRunning) {
      state = ProcessState.FETCHING;
    }
    artifact.fetch(spec.artifact(), msg -> {
      log.info("plugin={} alloc={}: {}", spec.id(), spec.allocId(), msg);
      emit(AgentEvent.ARTIFACT_FETCHING, msg);
    }, this::fetched);
  }

  private void fetched(Revision rev, Throwable error, boolean downloaded) {
    if (state == ProcessState.STOPPING || state == ProcessState.STOPPED
        || state == ProcessState.DETACHED) {
      return; // stopped meanwhile
    }
    if (error != null) {
      artifactFailed(error);
      return;
    }
    artifact.ready(rev);
    if (downloaded) {
      metrics.artifactInstalled(spec.id());
      emit(AgentEvent.ARTIFACT_READY, "revision " + rev.name() + " verified and installed");
    }
    if (process != null) {
      swapLocked("new revision " + rev.name());
    } else if (state == ProcessState.FETCHING || state == ProcessState.NEW) {
      launchLocked();
    }
  }

  private void artifactFailed(Throwable error) {
    Throwable t = error;
    while (t instanceof CompletionException && t.getCause() != null) {
      t = t.getCause();
    }
    String reason = t instanceof ArtifactException ae ? ae.reason().label() : "io";
    String msg = t.getMessage() == null ? t.toString() : t.getMessage();
    artifact.failed(msg);
    metrics.artifactFailure(spec.id(), reason);
    if (process != null) {
      // An update: the revision that runs now stays.
      log.error("plugin={} alloc={}: the new artifact cannot be used, pid {} keeps running"
          + " revision {}: {}", spec.id(), spec.allocId(), process.pid(),
          artifact.running() == null ? "(none)" : artifact.running().name(), msg);
      emit(AgentEvent.ARTIFACT_FAILED, msg + " (pid " + process.pid() + " keeps running "
          + (artifact.running() == null ? "its command"
              : "revision " + artifact.running().name()) + ")");
      return;
    }
    state = ProcessState.FAILED;
    log.error("plugin={} type={} alloc={}: artifact failed, not starting: {}", spec.id(),
        kind(), spec.allocId(), msg);
    emit(AgentEvent.ARTIFACT_FAILED, msg);
  }

  /** Stops the current process to launch the current spec (and revision) at once. */
  private void swapLocked(String why) {
    if (process == null) {
      if (pendingStart != null) {
        pendingStart.cancel(false);
      }
      launchLocked();
      return;
    }
    if (swapping) {
      return; // already stopping it; the exit launches what is current then
    }
    swapping = true;
    String msg = "stopping pid " + process.pid() + " to start " + why;
    log.info("plugin={} alloc={}: {}", spec.id(), spec.allocId(), msg);
    emit(AgentEvent.RESTARTING_FOR_UPDATE, msg);
    // Its registration must not look healthy while the process goes away and the new one
    // starts: marked now, not a probe interval later.
    hook.replacingProcess(msg);
    process.terminate(grace, scheduler);
  }

  /**
   * Applies a new spec of the same plugin under the same supervision
   * ({@link PluginSpec#sameSupervision}): new limits apply at once; a new command, arguments,
   * environment or artifact restart the process on it (an artifact is fetched first, while the
   * old process keeps running).
   */
  void update(PluginSpec next) {
    requireNonNull(next, "next");
    synchronized (lock) {
      if (!spec.sameSupervision(next)) {
        throw new IllegalArgumentException("plugin " + spec.id() + ": " + next
            + " needs a new task, not an update");
      }
      if (state == ProcessState.STOPPING || state == ProcessState.STOPPED
          || state == ProcessState.DETACHED) {
        return;
      }
      PluginSpec old = spec;
      spec = next;
      if (!old.limits().equals(next.limits()) && monitor != null) {
        monitor.setLimits(next.id(), next.limits());
        log.info("plugin={}: resource limits now {}", next.id(), next.limits());
      }
      boolean processChanged = !Objects.equals(old.command(), next.command())
          || !old.args().equals(next.args()) || !old.env().equals(next.env())
          || !Objects.equals(old.artifact(), next.artifact());
      if (!processChanged) {
        return;
      }
      if (next.artifact() != null && !artifact.isCurrent(next.artifact())) {
        if (process != null) {
          fetchLocked(true);
        } else {
          if (pendingStart != null) {
            pendingStart.cancel(false);
          }
          fetchLocked(false);
        }
        return;
      }
      if (next.artifact() == null) {
        artifact.dropped();
      }
      artifact.cancelFetch(); // a fetch for the previous config is no longer wanted
      swapLocked("the new config");
    }
  }

  /**
   * A probe of this plugin completed (the supervisor's probe observer). The first ready probe
   * sent after the current process was launched proves its revision: older ones are removed.
   */
  void probed(boolean ready, long sentNanos) {
    Revision keep;
    synchronized (lock) {
      if (!ready || process == null || !spec.launched() || !artifact.confirmedBy(sentNanos)) {
        return;
      }
      keep = artifact.running();
    }
    // keep == null: the plugin no longer runs an artifact, none of its revisions is needed.
    artifact.pruneAllBut(keep);
  }

  // ---- resource limits ---------------------------------------------------------------------

  private void limitExceeded(String pluginId, ResourceMonitor.Breach breach) {
    synchronized (lock) {
      if (process == null || process.pid() != breach.pid() || state != ProcessState.RUNNING
          || swapping) {
        return;
      }
      limitRestarts++;
      metrics.limitRestart(spec.id(), breach.resource().label());
      String msg = breach.message() + "; stopping pid " + process.pid();
      log.warn("plugin={} type={} alloc={}: {}", spec.id(), kind(), spec.allocId(), msg);
      emit(AgentEvent.LIMIT_EXCEEDED, msg);
      restartRequested = true;
      process.terminate(grace, scheduler);
    }
  }

  // ---- exit and restart --------------------------------------------------------------------

  private void exited(LaunchedProcess p, int code) {
    synchronized (lock) {
      if (p != process) {
        return;
      }
      process = null;
      currentPid = 0;
      try {
        records.remove(spec.id(), p.pid());
      } catch (IOException e) {
        log.warn("plugin={}: cannot remove process record: {}", spec.id(), e.toString());
      }
      String how = code < 0 ? "exited" : "exited with code " + code;
      if (state == ProcessState.STOPPING || state == ProcessState.STOPPED
          || state == ProcessState.DETACHED) {
        return;
      }
      if (swapping) {
        // Stopped for a new config or revision: start that now, outside the restart policy.
        swapping = false;
        restartRequested = false;
        emit(AgentEvent.PROCESS_EXITED, "pid " + p.pid() + " " + how);
        restarts++;
        metrics.restart(spec.id());
        launchLocked();
        return;
      }
      boolean requested = restartRequested;
      restartRequested = false;
      log.warn("plugin={} type={} alloc={}: pid {} {}{}", spec.id(), kind(),
          spec.allocId(), p.pid(), how, requested ? " (restart requested)" : "");
      if (!requested) {
        failed("pid " + p.pid() + " " + how + ExitReason.signal(code) + lastLogLine());
      }
      emit(AgentEvent.PROCESS_EXITED, "pid " + p.pid() + " " + how);
      decideRestart("pid " + p.pid() + " " + how);
    }
  }

  private void decideRestart(String why) {
    RestartTracker.Decision d = tracker.onExit(clock.instant());
    if (d instanceof RestartTracker.Decision.Restart r) {
      state = ProcessState.RESTARTING;
      String msg = "restarting in " + Durations.format(r.delay()) + " (attempt " + r.attempt()
          + " of " + spec.restart().attempts() + " within "
          + Durations.format(spec.restart().interval())
          + (r.waitedForInterval() ? ", attempts used up: waited for the interval to end" : "")
          + ")";
      log.info("plugin={} alloc={}: {}", spec.id(), spec.allocId(), msg);
      emit(AgentEvent.RESTART_SCHEDULED, msg);
      pendingStart = scheduler.schedule(this::restartNow, r.delay().toNanos(),
          TimeUnit.NANOSECONDS);
    } else {
      String reason = ((RestartTracker.Decision.GiveUp) d).reason();
      state = ProcessState.FAILED;
      log.error("plugin={} type={} alloc={}: not restarting after {}: {}", spec.id(), kind(),
          spec.allocId(), why, reason);
      emit(AgentEvent.NOT_RESTARTING, reason);
    }
  }

  private void restartNow() {
    synchronized (lock) {
      if (state != ProcessState.RESTARTING) {
        return;
      }
      restarts++;
      metrics.restart(spec.id());
      launchLocked();
    }
  }

  /**
   * The hook's {@code TaskLifecycle.restart}: called on a scheduler thread, must not block. Stops
   * the process; its exit then takes the restart path.
   */
  void requestRestart(String reason) {
    synchronized (lock) {
      if (!spec.launched()) {
        log.warn("plugin={} alloc={}: restart requested ({}), but the agent does not run this"
            + " external plugin's process", spec.id(), spec.allocId(), reason);
        emit(AgentEvent.RESTART_REQUESTED, "restart requested but the plugin is external: "
            + reason);
        return;
      }
      if (state != ProcessState.RUNNING || process == null) {
        return; // already exiting, restarting, failed or stopping
      }
      restartRequested = true;
      emit(AgentEvent.RESTART_REQUESTED, "stopping pid " + process.pid() + ": " + reason);
      process.terminate(grace, scheduler);
    }
  }

  // ---- stop --------------------------------------------------------------------------------

  /**
   * Stops supervision (the hook deregisters the plugin) and the process (SIGTERM, SIGKILL after
   * the grace period). Completes when the process has exited. Idempotent.
   */
  CompletableFuture<Void> stop(String reason) {
    LaunchedProcess p;
    synchronized (lock) {
      if (stopped != null) {
        return stopped;
      }
      if (pendingStart != null) {
        pendingStart.cancel(false);
      }
      p = process;
      if (state != ProcessState.EXTERNAL) {
        state = ProcessState.STOPPING;
      }
      artifact.cancelFetch();
      stopped = new CompletableFuture<>();
    }
    if (monitor != null) {
      monitor.untrack(spec.id());
    }
    try {
      hook.stop(StopRequest.because(reason));
    } catch (RuntimeException e) {
      log.error("plugin={}: stopping supervision failed", spec.id(), e);
    }
    if (p == null) {
      finishStop(null);
      return stopped;
    }
    p.terminate(grace, scheduler).whenComplete((code, error) -> finishStop(p));
    return stopped;
  }

  private void finishStop(LaunchedProcess p) {
    synchronized (lock) {
      if (spec.launched()) {
        state = ProcessState.STOPPED;
        try {
          // Only this task's own record: the plugin may have been configured again since, and
          // the new task's process recorded under the same id.
          if (p != null) {
            records.remove(spec.id(), p.pid());
          }
        } catch (IOException e) {
          log.warn("plugin={}: cannot remove process record: {}", spec.id(), e.toString());
        }
        if (p != null) {
          log.info("plugin={} alloc={}: stopped pid {}", spec.id(), spec.allocId(), p.pid());
          emit(AgentEvent.PROCESS_STOPPED, "stopped pid " + p.pid());
        }
      }
      process = null;
      currentPid = 0;
    }
    stopped.complete(null);
  }

  /**
   * Leaves the process running and its record in place, for the next agent start to re-attach.
   * Supervision is not stopped here (that would deregister the plugin): the agent shuts the
   * scheduler and the registry down instead, keeping the registrations in the state file.
   */
  void detach() {
    synchronized (lock) {
      if (pendingStart != null) {
        pendingStart.cancel(false);
      }
      artifact.cancelFetch();
      if (monitor != null) {
        monitor.untrack(spec.id());
      }
      if (process != null) {
        log.info("plugin={} alloc={}: leaving pid {} running", spec.id(), spec.allocId(),
            process.pid());
        state = ProcessState.DETACHED;
      } else if (state != ProcessState.EXTERNAL) {
        state = ProcessState.STOPPED;
      }
    }
    // Close the channel and end probing, but keep the registrations for the next start.
    hook.detach("agent shutting down with leave_running");
  }

  // ---- status ------------------------------------------------------------------------------

  TaskStatus status() {
    List<ResourceSample> samples = monitor == null || !spec().launched() ? List.of()
        : monitor.history(spec().id());
    synchronized (lock) {
      return new TaskStatus(spec.id(), spec.type(), spec.allocId(), spec.launched(), state,
          process == null ? 0 : process.pid(), restarts,
          process != null && process.reattached(), hook.phase(), hook.healthy(),
          hook.socketPath(), logFile == null ? null : logFile.file(), false,
          artifact.running() == null ? null : artifact.running().name(), artifact.error(),
          spec.limits(),
          limitRestarts, samples, lastFailure, lastFailureTime);
    }
  }

  /**
   * The last line the process wrote to its log, as a hint of why it exited:
   * {@code "; last log line: <line>"}, or empty.
   */
  private String lastLogLine() {
    if (logFile == null) {
      return "";
    }
    try {
      return ExitReason.lastLogLine(logFile.file());
    } catch (IOException | RuntimeException e) {
      log.debug("plugin={}: cannot read the end of {}: {}", spec.id(), logFile.file(),
          e.toString());
      return "";
    }
  }

  void rotateLog() {
    if (logFile == null) {
      return;
    }
    try {
      if (logFile.rotateIfNeeded()) {
        log.debug("plugin={}: rotated log {}", spec.id(), logFile.file());
      }
    } catch (IOException e) {
      log.warn("plugin={}: cannot rotate log {}: {}", spec.id(), logFile.file(), e.toString());
    }
  }

  private void emit(String type, String message) {
    try {
      events.accept(new AgentEvent(clock.instant(), spec.id(), type, message));
    } catch (RuntimeException e) {
      log.error("plugin={}: agent listener threw", spec.id(), e);
    }
  }

  /** controller, node or monolith, for log lines. */
  private String kind() {
    return spec.type().dirName();
  }
}
