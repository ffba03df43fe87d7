package dev.csisupervisor.tasks.process;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.time.Instant;

/**
 * Decides, each time a plugin process exits, whether and when to start it again, following a
 * {@link RestartPolicy} the way a scheduler's restart tracker does: the interval starts at the
 * first restart; within it at most {@code attempts} restarts, each after {@code delay}; once they
 * are used up, {@code DELAY} mode waits for the interval to end and {@code FAIL} mode gives up.
 *
 * <p>Time is passed in, so the policy is tested without waiting. Not thread-safe: the owning task
 * calls it under its own lock.
 */
public final class RestartTracker {

  /** What to do about an exit. */
  public sealed interface Decision {
    /** Start again after {@code delay}; {@code attempt} counts restarts in the current interval. */
    record Restart(Duration delay, int attempt, boolean waitedForInterval) implements Decision {}

    /** Do not restart: the policy's attempts are used up in FAIL mode. */
    record GiveUp(String reason) implements Decision {}
  }

  private final RestartPolicy policy;
  private Instant intervalStart;
  private int count;
  private long total;

  public RestartTracker(RestartPolicy policy) {
    this.policy = requireNonNull(policy, "policy");
  }

  /** The decision for an exit that happened at {@code now}. */
  public Decision onExit(Instant now) {
    requireNonNull(now, "now");
    if (policy.attempts() == 0 && policy.mode() == RestartPolicy.Mode.FAIL) {
      return new Decision.GiveUp("restart policy allows no restarts (attempts: 0, mode: fail)");
    }
    if (intervalStart == null || !now.isBefore(intervalStart.plus(policy.interval()))) {
      intervalStart = now;
      count = 0;
    }
    count++;
    if (count > policy.attempts()) {
      if (policy.mode() == RestartPolicy.Mode.FAIL) {
        return new Decision.GiveUp("exceeded " + policy.attempts() + " restart attempt(s) within "
            + policy.interval() + " (restart mode fail)");
      }
      // DELAY: wait for this interval to end; the restart then opens a new interval.
      Duration wait = Duration.between(now, intervalStart.plus(policy.interval()));
      Duration delay = wait.compareTo(policy.delay()) > 0 ? wait : policy.delay();
      intervalStart = now.plus(delay);
      count = 1;
      total++;
      return new Decision.Restart(delay, count, true);
    }
    total++;
    return new Decision.Restart(policy.delay(), count, false);
  }

  /** Restarts decided so far (over all intervals). */
  public long totalRestarts() {
    return total;
  }

  public RestartPolicy policy() {
    return policy;
  }
}
