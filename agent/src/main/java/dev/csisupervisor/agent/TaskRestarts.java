package dev.csisupervisor.agent;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.common.Durations;
import dev.csisupervisor.tasks.process.ExitReason;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.RestartPolicy;
import dev.csisupervisor.tasks.process.RestartTracker;
import dev.csisupervisor.tasks.process.RotatingLog;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The restart path of one {@link PluginTask}: a process that exits on its own, fails to start,
 * or is stopped on request (the hook's health-timeout restart, a resource limit) is started
 * again after the restart policy's delay ({@link RestartTracker}), or the task gives up and is
 * {@link ProcessState#FAILED}. Counts the restarts and the limit restarts for the task's status.
 *
 * <p>Guarded by the task's lock: the methods named {@code ...Locked} are called holding it; the
 * restart timer, {@link #requestRestart} and the resource monitor's {@link #limitExceeded} take
 * it. Logs under the task's logger name.
 */
final class TaskRestarts {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);

  private final PluginTask task;
  private final ArtifactSwap swap;
  private final RestartTracker tracker;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final Duration grace;
  private final AgentMetrics metrics;
  private final Object lock;

  private boolean restartRequested;
  private int restarts;
  private int limitRestarts;

  TaskRestarts(PluginTask task, ArtifactSwap swap, RestartPolicy policy, TaskServices services,
      Object lock) {
    this.task = task;
    this.swap = swap;
    this.tracker = new RestartTracker(policy);
    this.scheduler = services.scheduler();
    this.clock = services.clock();
    this.grace = services.grace();
    this.metrics = services.metrics();
    this.lock = lock;
  }

  int restartsLocked() {
    return restarts;
  }

  int limitRestartsLocked() {
    return limitRestarts;
  }

  void limitExceeded(String pluginId, ResourceMonitor.Breach breach) {
    synchronized (lock) {
      LaunchedProcess process = task.processLocked();
      if (process == null || process.pid() != breach.pid()
          || task.stateLocked() != ProcessState.RUNNING || swap.swappingLocked()) {
        return;
      }
      PluginSpec spec = task.spec();
      limitRestarts++;
      metrics.limitRestart(spec.id(), breach.resource().label());
      String msg = breach.message() + "; stopping pid " + process.pid();
      log.warn("plugin={} type={} alloc={}: {}", spec.id(), task.kind(), spec.allocId(), msg);
      task.emit(AgentEvent.LIMIT_EXCEEDED, msg);
      restartRequested = true;
      process.terminate(grace, scheduler);
    }
  }

  /**
   * The current process {@code p} exited ({@code how}) after being stopped for a swap: the new
   * config or revision is launched now, outside the restart policy.
   */
  void swapExitedLocked(LaunchedProcess p, String how) {
    restartRequested = false;
    task.emit(AgentEvent.PROCESS_EXITED, "pid " + p.pid() + " " + how);
    restarts++;
    metrics.restart(task.spec().id());
    task.launchLocked();
  }

  /** The current process {@code p} exited ({@code how}, {@code code}) on its own or on request. */
  void exitedLocked(LaunchedProcess p, int code, String how) {
    PluginSpec spec = task.spec();
    boolean requested = restartRequested;
    restartRequested = false;
    log.warn("plugin={} type={} alloc={}: pid {} {}{}", spec.id(), task.kind(),
        spec.allocId(), p.pid(), how, requested ? " (restart requested)" : "");
    if (!requested) {
      task.failed("pid " + p.pid() + " " + how + ExitReason.signal(code) + lastLogLine());
    }
    task.emit(AgentEvent.PROCESS_EXITED, "pid " + p.pid() + " " + how);
    decideLocked("pid " + p.pid() + " " + how);
  }

  /** The process exited or did not start ({@code why}): restart it later, or give up. */
  void decideLocked(String why) {
    PluginSpec spec = task.spec();
    RestartTracker.Decision d = tracker.onExit(clock.instant());
    if (d instanceof RestartTracker.Decision.Restart r) {
      task.stateLocked(ProcessState.RESTARTING);
      String msg = "restarting in " + Durations.format(r.delay()) + " (attempt " + r.attempt()
          + " of " + spec.restart().attempts() + " within "
          + Durations.format(spec.restart().interval())
          + (r.waitedForInterval() ? ", attempts used up: waited for the interval to end" : "")
          + ")";
      log.info("plugin={} alloc={}: {}", spec.id(), spec.allocId(), msg);
      task.emit(AgentEvent.RESTART_SCHEDULED, msg);
      task.pendingStartLocked(scheduler.schedule(this::restartNow, r.delay().toNanos(),
          TimeUnit.NANOSECONDS));
    } else {
      String reason = ((RestartTracker.Decision.GiveUp) d).reason();
      task.stateLocked(ProcessState.FAILED);
      log.error("plugin={} type={} alloc={}: not restarting after {}: {}", spec.id(),
          task.kind(), spec.allocId(), why, reason);
      task.emit(AgentEvent.NOT_RESTARTING, reason);
    }
  }

  private void restartNow() {
    synchronized (lock) {
      if (task.stateLocked() != ProcessState.RESTARTING) {
        return;
      }
      restarts++;
      metrics.restart(task.spec().id());
      task.launchLocked();
    }
  }

  /**
   * The hook's {@code TaskLifecycle.restart}: called on a scheduler thread, must not block. Stops
   * the process; its exit then takes the restart path.
   */
  void requestRestart(String reason) {
    synchronized (lock) {
      PluginSpec spec = task.spec();
      if (!spec.launched()) {
        log.warn("plugin={} alloc={}: restart requested ({}), but the agent does not run this"
            + " external plugin's process", spec.id(), spec.allocId(), reason);
        task.emit(AgentEvent.RESTART_REQUESTED, "restart requested but the plugin is external: "
            + reason);
        return;
      }
      LaunchedProcess process = task.processLocked();
      if (task.stateLocked() != ProcessState.RUNNING || process == null) {
        return; // already exiting, restarting, failed or stopping
      }
      restartRequested = true;
      task.emit(AgentEvent.RESTART_REQUESTED, "stopping pid " + process.pid() + ": " + reason);
      process.terminate(grace, scheduler);
    }
  }

  /**
   * The last line the process wrote to its log, as a hint of why it exited:
   * {@code "; last log line: <line>"}, or empty.
   */
  private String lastLogLine() {
    RotatingLog logFile = task.logFile();
    if (logFile == null) {
      return "";
    }
    try {
      return ExitReason.lastLogLine(logFile.file());
    } catch (IOException | RuntimeException e) {
      log.debug("plugin={}: cannot read the end of {}: {}", task.spec().id(), logFile.file(),
          e.toString());
      return "";
    }
  }
}
