package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.agent.config.Interpolation;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import dev.csisupervisor.tasks.resources.ResourceSample;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.tasks.process.RotatingLog;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.PrestartResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
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
 * process ready. The revisions' bookkeeping is {@link ArtifactRevisions}'; the fetch and the swap,
 * {@link ArtifactSwap}'s; what the process runs, {@link LaunchCommand}'s.
 *
 * <p><b>Resources.</b> The process is sampled by the agent's {@link ResourceMonitor}; a plugin
 * that stays over a limit is stopped and goes through the restart path.
 *
 * <p><b>Restarts.</b> The restart policy, restart requests and limit restarts are
 * {@link TaskRestarts}'; stopping and detaching, {@link TaskStop}'s.
 *
 * <p>Thread-safe: every transition happens under {@link #lock}, which also guards the task's
 * {@link ArtifactRevisions}, {@link ArtifactSwap}, {@link TaskRestarts} and {@link TaskStop};
 * exits and timers hop onto the agent's scheduler. Nothing here blocks on a process.
 */
final class PluginTask {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);

  private final CsiPluginSupervisorHook hook;
  private final RotatingLog logFile;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final ProcessRecords records;
  private final Consumer<AgentEvent> events;
  private final ResourceMonitor monitor;

  private final Object lock = new Object();
  // Written under lock; volatile so that id, type and kind (which an update never changes) can
  // be read without it.
  private volatile PluginSpec spec;
  // Guarded by lock.
  private ProcessState state = ProcessState.NEW;
  private LaunchedProcess process;
  private ScheduledFuture<?> pendingStart;
  /** Which revision to launch, which one runs, the fetch in flight. */
  private final ArtifactRevisions artifact;
  /** Fetching before a launch; stopping the process for a new revision or config. */
  private final ArtifactSwap swap;
  /** The restart policy, restart requests and limit restarts. */
  private final TaskRestarts restarts;
  /** Stopping or detaching, once. */
  private final TaskStop stopping;
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
    this.events = services.events();
    this.monitor = services.monitor();
    this.artifact = new ArtifactRevisions(spec.id(), services.artifacts(), scheduler,
        services.io(), lock);
    this.swap = new ArtifactSwap(this, artifact, services, lock);
    this.restarts = new TaskRestarts(this, swap, spec.restart(), services, lock);
    this.stopping = new TaskStop(this, artifact, services, lock);
    if (spec.launched()) {
      requireNonNull(logFile, "logFile");
      if (monitor != null) {
        monitor.track(spec.id(), () -> currentPid, spec.limits(), restarts::limitExceeded);
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

  /** Launches the current spec's process (its artifact fetched first if it is not ready). */
  void launchLocked() {
    pendingStart = null;
    if (spec.artifact() != null && !artifact.isCurrent(spec.artifact())) {
      swap.fetchLocked(false);
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
    restarts.decideLocked("failed to start: " + reason);
  }

  /** Keeps {@code reason} as the last failure, shown by status until a later one. */
  void failed(String reason) {
    lastFailure = reason;
    lastFailureTime = clock.instant();
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
      if (stoppingLocked()) {
        return;
      }
      PluginSpec old = spec;
      spec = next;
      if (!old.limits().equals(next.limits()) && monitor != null) {
        monitor.setLimits(next.id(), next.limits());
        log.info("plugin={}: resource limits now {}", next.id(), next.limits());
      }
      swap.updatedLocked(old, next);
    }
  }

  /**
   * A probe of this plugin completed (the supervisor's probe observer). The first ready probe
   * sent after the current process was launched proves its revision: older ones are removed.
   */
  void probed(boolean ready, long sentNanos) {
    swap.probed(ready, sentNanos);
  }

  // ---- exit --------------------------------------------------------------------------------

  private void exited(LaunchedProcess p, int code) {
    synchronized (lock) {
      if (p != process) {
        return;
      }
      forgetProcessLocked();
      try {
        records.remove(spec.id(), p.pid());
      } catch (IOException e) {
        log.warn("plugin={}: cannot remove process record: {}", spec.id(), e.toString());
      }
      String how = code < 0 ? "exited" : "exited with code " + code;
      if (stoppingLocked()) {
        return;
      }
      if (swap.swappingLocked()) {
        // Stopped for a new config or revision: start that now, outside the restart policy.
        swap.swappedLocked();
        restarts.swapExitedLocked(p, how);
        return;
      }
      restarts.exitedLocked(p, code, how);
    }
  }

  /**
   * The hook's {@code TaskLifecycle.restart}: called on a scheduler thread, must not block. Stops
   * the process; its exit then takes the restart path.
   */
  void requestRestart(String reason) {
    restarts.requestRestart(reason);
  }

  // ---- stop --------------------------------------------------------------------------------

  /**
   * Stops supervision (the hook deregisters the plugin) and the process (SIGTERM, SIGKILL after
   * the grace period). Completes when the process has exited. Idempotent.
   */
  CompletableFuture<Void> stop(String reason) {
    return stopping.stop(reason);
  }

  /**
   * Leaves the process running and its record in place, for the next agent start to re-attach
   * (see {@link TaskStop#detach}).
   */
  void detach() {
    stopping.detach();
  }

  // ---- status ------------------------------------------------------------------------------

  TaskStatus status() {
    List<ResourceSample> samples = monitor == null || !spec().launched() ? List.of()
        : monitor.history(spec().id());
    synchronized (lock) {
      return new TaskStatus(spec.id(), spec.type(), spec.allocId(), spec.launched(), state,
          process == null ? 0 : process.pid(), restarts.restartsLocked(),
          process != null && process.reattached(), hook.phase(), hook.healthy(),
          hook.socketPath(), logFile == null ? null : logFile.file(), false,
          artifact.running() == null ? null : artifact.running().name(), artifact.error(),
          spec.limits(),
          restarts.limitRestartsLocked(), samples, lastFailure, lastFailureTime);
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

  // ---- for ArtifactSwap, TaskRestarts and TaskStop, holding the lock -----------------------

  ProcessState stateLocked() {
    return state;
  }

  void stateLocked(ProcessState next) {
    state = next;
  }

  /** Whether the task is being stopped, stopped or detached: nothing is launched any more. */
  boolean stoppingLocked() {
    return state == ProcessState.STOPPING || state == ProcessState.STOPPED
        || state == ProcessState.DETACHED;
  }

  /** The current process; null if none runs. */
  LaunchedProcess processLocked() {
    return process;
  }

  /** The current process exited or was stopped. */
  void forgetProcessLocked() {
    process = null;
    currentPid = 0;
  }

  /** A start scheduled for later (a restart's). */
  void pendingStartLocked(ScheduledFuture<?> start) {
    pendingStart = start;
  }

  void cancelPendingStartLocked() {
    if (pendingStart != null) {
      pendingStart.cancel(false);
    }
  }

  /** Where a launched plugin's output goes; null for a socket-only plugin. */
  RotatingLog logFile() {
    return logFile;
  }

  void emit(String type, String message) {
    try {
      events.accept(new AgentEvent(clock.instant(), spec.id(), type, message));
    } catch (RuntimeException e) {
      log.error("plugin={}: agent listener threw", spec.id(), e);
    }
  }

  /** controller, node or monolith, for log lines. */
  String kind() {
    return spec.type().dirName();
  }
}
