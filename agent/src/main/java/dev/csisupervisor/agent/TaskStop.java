package dev.csisupervisor.agent;

import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The end of one {@link PluginTask}: {@link #stop} ends supervision and the process, once;
 * {@link #detach} leaves the process running for the next agent start to re-attach.
 *
 * <p>Guarded by the task's lock: both take it, and so does the end of a stop, when the process
 * has exited. Logs under the task's logger name.
 */
final class TaskStop {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);

  private final PluginTask task;
  private final ArtifactRevisions artifact;
  private final ProcessRecords records;
  private final ResourceMonitor monitor;
  private final ScheduledExecutorService scheduler;
  private final Duration grace;
  private final Object lock;

  private CompletableFuture<Void> stopped; // guarded by lock

  TaskStop(PluginTask task, ArtifactRevisions artifact, TaskServices services, Object lock) {
    this.task = task;
    this.artifact = artifact;
    this.records = services.records();
    this.monitor = services.monitor();
    this.scheduler = services.scheduler();
    this.grace = services.grace();
    this.lock = lock;
  }

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
      task.cancelPendingStartLocked();
      p = task.processLocked();
      if (task.stateLocked() != ProcessState.EXTERNAL) {
        task.stateLocked(ProcessState.STOPPING);
      }
      artifact.cancelFetch();
      stopped = new CompletableFuture<>();
    }
    PluginSpec spec = task.spec();
    if (monitor != null) {
      monitor.untrack(spec.id());
    }
    try {
      task.hook().stop(StopRequest.because(reason));
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
      PluginSpec spec = task.spec();
      if (spec.launched()) {
        task.stateLocked(ProcessState.STOPPED);
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
          task.emit(AgentEvent.PROCESS_STOPPED, "stopped pid " + p.pid());
        }
      }
      task.forgetProcessLocked();
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
      PluginSpec spec = task.spec();
      task.cancelPendingStartLocked();
      artifact.cancelFetch();
      if (monitor != null) {
        monitor.untrack(spec.id());
      }
      LaunchedProcess process = task.processLocked();
      if (process != null) {
        log.info("plugin={} alloc={}: leaving pid {} running", spec.id(), spec.allocId(),
            process.pid());
        task.stateLocked(ProcessState.DETACHED);
      } else if (task.stateLocked() != ProcessState.EXTERNAL) {
        task.stateLocked(ProcessState.STOPPED);
      }
    }
    // Close the channel and end probing, but keep the registrations for the next start.
    task.hook().detach("agent shutting down with leave_running");
  }
}
