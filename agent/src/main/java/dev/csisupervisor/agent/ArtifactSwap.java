package dev.csisupervisor.agent;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.agent.TaskStatus.ProcessState;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.tasks.artifact.ArtifactException;
import dev.csisupervisor.tasks.artifact.Revision;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The artifact swap of one {@link PluginTask}: the spec's artifact fetched before a launch, and a
 * running process swapped for a new revision or a new config. An update with a new artifact
 * fetches it while the old process keeps running; once it is ready, the old process is stopped
 * (its registration marked as being replaced) and its exit launches the new one, outside the
 * restart policy. A revision that cannot be fetched leaves the running process alone. Older
 * revisions are pruned once a ready probe confirms the new process.
 *
 * <p>Guarded by the task's lock: every method but {@link #probed} is called holding it (a
 * fetch's result comes back on the scheduler, holding it); {@link #probed} takes it. Logs under
 * the task's logger name.
 */
final class ArtifactSwap {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);

  private final PluginTask task;
  private final ArtifactRevisions artifact;
  private final ScheduledExecutorService scheduler;
  private final Duration grace;
  private final AgentMetrics metrics;
  private final Object lock;

  /** The process is being stopped to launch a new revision or command: no restart policy. */
  private boolean swapping;

  ArtifactSwap(PluginTask task, ArtifactRevisions artifact, TaskServices services, Object lock) {
    this.task = task;
    this.artifact = artifact;
    this.scheduler = services.scheduler();
    this.grace = services.grace();
    this.metrics = services.metrics();
    this.lock = lock;
  }

  /** Whether the current process is being stopped for a swap. */
  boolean swappingLocked() {
    return swapping;
  }

  /** The process stopped for a swap exited: what is current is launched now. */
  void swappedLocked() {
    swapping = false;
  }

  /**
   * Makes the spec's artifact ready, then launches it; {@code whileRunning}: the current
   * process keeps running until then (an update).
   */
  void fetchLocked(boolean whileRunning) {
    PluginSpec spec = task.spec();
    if (!whileRunning) {
      task.stateLocked(ProcessState.FETCHING);
    }
    artifact.fetch(spec.artifact(), msg -> {
      log.info("plugin={} alloc={}: {}", spec.id(), spec.allocId(), msg);
      task.emit(AgentEvent.ARTIFACT_FETCHING, msg);
    }, this::fetched);
  }

  private void fetched(Revision rev, Throwable error, boolean downloaded) {
    if (task.stoppingLocked()) {
      return; // stopped meanwhile
    }
    if (error != null) {
      artifactFailed(error);
      return;
    }
    artifact.ready(rev);
    if (downloaded) {
      metrics.artifactInstalled(task.spec().id());
      task.emit(AgentEvent.ARTIFACT_READY, "revision " + rev.name() + " verified and installed");
    }
    ProcessState state = task.stateLocked();
    if (task.processLocked() != null) {
      swapLocked("new revision " + rev.name());
    } else if (state == ProcessState.FETCHING || state == ProcessState.NEW) {
      task.launchLocked();
    }
  }

  private void artifactFailed(Throwable error) {
    PluginSpec spec = task.spec();
    LaunchedProcess process = task.processLocked();
    Throwable t = Futures.unwrap(error);
    String reason = t instanceof ArtifactException ae ? ae.reason().label() : "io";
    String msg = t.getMessage() == null ? t.toString() : t.getMessage();
    artifact.failed(msg);
    metrics.artifactFailure(spec.id(), reason);
    if (process != null) {
      // An update: the revision that runs now stays.
      log.error("plugin={} alloc={}: the new artifact cannot be used, pid {} keeps running"
          + " revision {}: {}", spec.id(), spec.allocId(), process.pid(),
          artifact.running() == null ? "(none)" : artifact.running().name(), msg);
      task.emit(AgentEvent.ARTIFACT_FAILED, msg + " (pid " + process.pid() + " keeps running "
          + (artifact.running() == null ? "its command"
              : "revision " + artifact.running().name()) + ")");
      return;
    }
    task.stateLocked(ProcessState.FAILED);
    log.error("plugin={} type={} alloc={}: artifact failed, not starting: {}", spec.id(),
        task.kind(), spec.allocId(), msg);
    task.emit(AgentEvent.ARTIFACT_FAILED, msg);
  }

  /** Stops the current process to launch the current spec (and revision) at once. */
  private void swapLocked(String why) {
    LaunchedProcess process = task.processLocked();
    if (process == null) {
      task.cancelPendingStartLocked();
      task.launchLocked();
      return;
    }
    if (swapping) {
      return; // already stopping it; the exit launches what is current then
    }
    swapping = true;
    PluginSpec spec = task.spec();
    String msg = "stopping pid " + process.pid() + " to start " + why;
    log.info("plugin={} alloc={}: {}", spec.id(), spec.allocId(), msg);
    task.emit(AgentEvent.RESTARTING_FOR_UPDATE, msg);
    // Its registration must not look healthy while the process goes away and the new one
    // starts: marked now, not a probe interval later.
    task.hook().replacingProcess(msg);
    process.terminate(grace, scheduler);
  }

  /**
   * The task's spec changed from {@code old} to {@code next} (already its spec): a new command,
   * arguments, environment or artifact restart the process on it (an artifact is fetched first,
   * while the old process keeps running).
   */
  void updatedLocked(PluginSpec old, PluginSpec next) {
    boolean processChanged = !Objects.equals(old.command(), next.command())
        || !old.args().equals(next.args()) || !old.env().equals(next.env())
        || !Objects.equals(old.artifact(), next.artifact());
    if (!processChanged) {
      return;
    }
    if (next.artifact() != null && !artifact.isCurrent(next.artifact())) {
      if (task.processLocked() != null) {
        fetchLocked(true);
      } else {
        task.cancelPendingStartLocked();
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

  /**
   * A probe of this plugin completed (the supervisor's probe observer). The first ready probe
   * sent after the current process was launched proves its revision: older ones are removed.
   */
  void probed(boolean ready, long sentNanos) {
    Revision keep;
    synchronized (lock) {
      if (!ready || task.processLocked() == null || !task.spec().launched()
          || !artifact.confirmedBy(sentNanos)) {
        return;
      }
      keep = artifact.running();
    }
    // keep == null: the plugin no longer runs an artifact, none of its revisions is needed.
    artifact.pruneAllBut(keep);
  }
}
