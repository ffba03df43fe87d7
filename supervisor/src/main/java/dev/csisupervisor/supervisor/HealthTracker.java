package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.Durations;
import dev.csisupervisor.registry.PluginHealth;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether one supervised plugin is healthy, what was last wrong with it, and which kind of failure the
 * registrations say: its transitions become a task event, the registrations' health and the health deadline.
 * Guarded by the hook's lock: every method is called with it held.
 */
final class HealthTracker {
  private static final Logger log = LoggerFactory.getLogger(HealthTracker.class);

  /** The failure kind of a registered plugin whose process the task runner is replacing. */
  static final String REPLACING_PROCESS = "REPLACING_PROCESS";
  private static final String FINGERPRINT_FAILED = "FINGERPRINT_FAILED";

  private final CsiPluginConfig config;
  private final String allocId;
  private final Clock clock;
  private final DesiredRegistrations desired;
  private final TaskNotifications notifications;
  private final HealthDeadline deadline;
  private boolean healthy;
  private String lastError = "not probed yet";
  /** The {@link ProbeFailures#kind} that made a registered plugin unhealthy. */
  private String unhealthyKind = "";

  HealthTracker(CsiPluginConfig config, String allocId, Clock clock, DesiredRegistrations desired,
      TaskNotifications notifications, HealthDeadline deadline) {
    this.config = config;
    this.allocId = allocId;
    this.clock = clock;
    this.desired = desired;
    this.notifications = notifications;
    this.deadline = deadline;
  }

  boolean healthy() {
    return healthy;
  }

  /** What was last wrong (empty once ready or registered). */
  void lastError(String problem) {
    lastError = problem;
  }

  /** A registered, healthy plugin became unhealthy for {@code problem}, of {@code kind}. */
  void unhealthy(String problem, String kind) {
    healthy = false;
    unhealthyKind = kind;
    log.warn("plugin={} alloc={} is unhealthy: {}", config.pluginId(), allocId, problem);
    notifications.event(TaskEvent.PLUGIN_UNHEALTHY, "plugin " + config.pluginId() + " is unhealthy: " + problem);
    desired.health(new PluginHealth(false, problem, clock.instant()));
    // Liveness: unhealthy for the whole health timeout means a restart.
    deadline.arm();
  }

  /** A registered plugin's probe failed: a transition if it was healthy, else the registrations say the new kind. */
  void probeFailed(String problem, String kind) {
    lastError = problem;
    if (healthy) {
      unhealthy(problem, kind);
    } else if (!kind.equals(unhealthyKind)
        // While the runner replaces the process, nothing serving the socket is expected: the
        // registration keeps saying why (the replacement), not what that looks like.
        && !(unhealthyKind.equals(REPLACING_PROCESS) && kind.equals(ProbeFailures.NOTHING_SERVING))) {
      // Still unhealthy, for another kind of reason (a stale socket, then a server that is not
      // CSI): the registration says the current one. No task event: health did not change.
      unhealthyKind = kind;
      log.info("plugin={} alloc={} is still unhealthy, now: {}", config.pluginId(), allocId, problem);
      desired.health(new PluginHealth(false, problem, clock.instant()));
    }
  }

  /** Its registration committed: healthy (a task event if it was registered and unhealthy before). */
  void registered(boolean first) {
    if (!first && !healthy) {
      log.info("plugin={} alloc={} is healthy again", config.pluginId(), allocId);
      notifications.event(TaskEvent.PLUGIN_HEALTHY, "plugin " + config.pluginId() + " is healthy again");
    }
    healthy = true;
    lastError = "";
    deadline.disarm();
  }

  /** Fingerprinting a registered plugin failed: a transition if it was healthy. */
  void fingerprintFailed(String problem) {
    lastError = problem;
    if (healthy) {
      unhealthy(problem, FINGERPRINT_FAILED);
    }
  }

  /**
   * The health deadline passed for a plugin {@code registered} (failing probes since) or not (not ready since its
   * start): said, and a restart requested (delivered outside every lock: the runner may call back into the hook).
   */
  void deadlinePassed(boolean registered) {
    String timeout = Durations.format(config.healthTimeout());
    String reason = (registered ? "unhealthy: failing probes for " + timeout + " after registration"
        : "unhealthy: did not become ready within " + timeout) + " (last error: " + lastError + ")";
    log.warn("plugin={} alloc={}: {}; restarting task", config.pluginId(), allocId, reason);
    if (!registered) {
      notifications.event(TaskEvent.PLUGIN_UNHEALTHY, reason); // a registered one had its event on the transition
    }
    notifications.event(TaskEvent.RESTART_REQUESTED, "restarting task: " + reason);
    notifications.restart(reason);
  }
}
