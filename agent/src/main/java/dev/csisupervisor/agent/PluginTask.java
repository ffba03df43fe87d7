package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.process.LaunchedProcess;
import dev.csisupervisor.agent.process.ProcessRecords;
import dev.csisupervisor.agent.process.RestartTracker;
import dev.csisupervisor.agent.process.RotatingLog;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.PrestartRequest;
import dev.csisupervisor.supervisor.PrestartResponse;
import dev.csisupervisor.supervisor.StopRequest;
import java.io.File;
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
import java.util.concurrent.CompletableFuture;
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
 * <p>Thread-safe: every transition happens under {@link #lock}; exits and timers hop onto the
 * agent's scheduler. Nothing here blocks on a process.
 */
final class PluginTask {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);
  static final String MOCK_PLUGIN_MAIN = "dev.csisupervisor.mockplugin.MockCsiPlugin";

  private final PluginSpec spec;
  private final CsiPluginSupervisorHook hook;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final ProcessRecords records;
  private final RotatingLog logFile;
  private final Duration grace;
  private final Consumer<AgentEvent> events;
  private final Runnable onRestart;
  private final RestartTracker tracker;

  private final Object lock = new Object();
  // Guarded by lock.
  private ProcessState state = ProcessState.NEW;
  private LaunchedProcess process;
  private ScheduledFuture<?> pendingStart;
  private boolean restartRequested;
  private int restarts;
  private CompletableFuture<Void> stopped;

  PluginTask(PluginSpec spec, CsiPluginSupervisorHook hook, ScheduledExecutorService scheduler,
      Clock clock, ProcessRecords records, RotatingLog logFile, Duration grace,
      Consumer<AgentEvent> events, Runnable onRestart) {
    this.spec = requireNonNull(spec, "spec");
    this.hook = requireNonNull(hook, "hook");
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.clock = requireNonNull(clock, "clock");
    this.records = records;
    this.logFile = logFile;
    this.grace = requireNonNull(grace, "grace");
    this.events = requireNonNull(events, "events");
    this.onRestart = requireNonNull(onRestart, "onRestart");
    this.tracker = new RestartTracker(spec.restart());
    if (spec.launched()) {
      requireNonNull(records, "records");
      requireNonNull(logFile, "logFile");
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

  /** The full command line a launched plugin runs (the built-in mock plugin expanded). */
  static List<String> commandLine(PluginSpec spec) {
    List<String> argv = new ArrayList<>();
    if (spec.command().equals(ConfigLoader.BUILTIN_MOCK_PLUGIN)) {
      argv.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      // Small and quick to start: the mock plugin needs little.
      argv.add("-XX:+UseSerialGC");
      argv.add("-XX:TieredStopAtLevel=1");
      argv.add("-Xmx64m");
      argv.add("-cp");
      argv.add(absoluteClassPath());
      argv.add(MOCK_PLUGIN_MAIN);
    } else {
      argv.add(spec.command());
    }
    argv.addAll(spec.args());
    return argv;
  }

  private static String absoluteClassPath() {
    List<String> parts = new ArrayList<>();
    for (String p : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!p.isEmpty()) {
        parts.add(Path.of(p).toAbsolutePath().toString());
      }
    }
    return String.join(File.pathSeparator, parts);
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
    state = ProcessState.STARTING;
    Map<String, String> env = new LinkedHashMap<>(spec.env());
    try {
      PrestartResponse pre = hook.prestart(PrestartRequest.withEnv(spec.env()));
      env.putAll(pre.env());
    } catch (IOException | RuntimeException e) {
      failedToStart("prestart failed: " + e.getMessage());
      return;
    }
    // The plugin runs on the host, not in a container: its endpoint is the host path.
    env.put("CSI_ENDPOINT", "unix://" + hook.socketPath());
    removeStaleSocket();
    List<String> argv = commandLine(spec);
    LaunchedProcess p;
    try {
      p = LaunchedProcess.launch(argv, env, logFile.file());
    } catch (IOException | RuntimeException e) {
      failedToStart(e.getMessage());
      return;
    }
    adopt(p);
    log.info("plugin={} type={} alloc={}: started pid {} ({}), log {}", spec.id(), kind(),
        spec.allocId(), p.pid(), argv.get(0), logFile.file());
    emit(AgentEvent.PROCESS_STARTED, "started pid " + p.pid());
    hook.poststart(new PoststartRequest(p.pid()));
  }

  private void adopt(LaunchedProcess p) {
    process = p;
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
    emit(AgentEvent.START_FAILED, reason);
    process = null;
    decideRestart("failed to start: " + reason);
  }

  // ---- exit and restart --------------------------------------------------------------------

  private void exited(LaunchedProcess p, int code) {
    synchronized (lock) {
      if (p != process) {
        return;
      }
      process = null;
      try {
        records.remove(spec.id());
      } catch (IOException e) {
        log.warn("plugin={}: cannot remove process record: {}", spec.id(), e.toString());
      }
      String how = code < 0 ? "exited" : "exited with code " + code;
      if (state == ProcessState.STOPPING || state == ProcessState.STOPPED
          || state == ProcessState.DETACHED) {
        return;
      }
      boolean requested = restartRequested;
      restartRequested = false;
      log.warn("plugin={} type={} alloc={}: pid {} {}{}", spec.id(), kind(),
          spec.allocId(), p.pid(), how, requested ? " (restart requested)" : "");
      emit(AgentEvent.PROCESS_EXITED, "pid " + p.pid() + " " + how);
      decideRestart("pid " + p.pid() + " " + how);
    }
  }

  private void decideRestart(String why) {
    RestartTracker.Decision d = tracker.onExit(clock.instant());
    if (d instanceof RestartTracker.Decision.Restart r) {
      state = ProcessState.RESTARTING;
      String msg = "restarting in " + human(r.delay()) + " (attempt " + r.attempt() + " of "
          + spec.restart().attempts() + " within " + human(spec.restart().interval())
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
      onRestart.run();
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
      stopped = new CompletableFuture<>();
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
          records.remove(spec.id());
        } catch (IOException e) {
          log.warn("plugin={}: cannot remove process record: {}", spec.id(), e.toString());
        }
        if (p != null) {
          log.info("plugin={} alloc={}: stopped pid {}", spec.id(), spec.allocId(), p.pid());
          emit(AgentEvent.PROCESS_STOPPED, "stopped pid " + p.pid());
        }
      }
      process = null;
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
    synchronized (lock) {
      return new TaskStatus(spec.id(), spec.type(), spec.allocId(), spec.launched(), state,
          process == null ? 0 : process.pid(), restarts,
          process != null && process.reattached(), hook.phase(), hook.healthy(),
          hook.socketPath(), logFile == null ? null : logFile.file());
    }
  }

  /** The current process, if any (tests and the demo kill it). */
  LaunchedProcess process() {
    synchronized (lock) {
      return process;
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
    return ConfigLoader.typeDir(spec.type());
  }

  static String human(Duration d) {
    if (d.toMillis() % 1000 != 0) {
      return d.toMillis() + "ms";
    }
    long s = d.toSeconds();
    return s != 0 && s % 60 == 0 ? s / 60 + "m" : s + "s";
  }
}
