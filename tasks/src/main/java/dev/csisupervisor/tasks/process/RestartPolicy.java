package dev.csisupervisor.tasks.process;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;

/**
 * How a launched plugin is restarted when its process exits, after a scheduler's restart block:
 * at most {@code attempts} restarts within {@code interval}, each after {@code delay}. When the
 * attempts of an interval are used up, {@link Mode#DELAY} waits until the interval is over and
 * starts counting again; {@link Mode#FAIL} gives up and leaves the plugin stopped.
 *
 * @param attempts how many restarts one interval allows; 0 never restarts
 * @param interval the window the attempts are counted in (starts at the first restart)
 * @param delay    the pause before each restart
 * @param mode     what happens when the attempts are used up
 */
public record RestartPolicy(int attempts, Duration interval, Duration delay, Mode mode) {

  /** What to do once an interval's attempts are used up. */
  public enum Mode {
    /** Wait until the interval ends, then restart again with a fresh count. */
    DELAY,
    /** Stop restarting; the plugin stays down until the agent restarts. */
    FAIL
  }

  /** Three restarts a minute, one second apart, then wait for the minute to end. */
  public static final RestartPolicy DEFAULT =
      new RestartPolicy(3, Duration.ofMinutes(1), Duration.ofSeconds(1), Mode.DELAY);

  public RestartPolicy {
    Bounds.atLeast(attempts, 0, "attempts");
    requireNonNull(interval, "interval");
    requireNonNull(delay, "delay");
    requireNonNull(mode, "mode");
    Bounds.positive(interval, "interval");
    Bounds.notNegative(delay, "delay");
    if (attempts > 0 && delay.multipliedBy(attempts).compareTo(interval) > 0) {
      throw new IllegalArgumentException("interval " + interval + " must be at least attempts ("
          + attempts + ") x delay (" + delay + ")");
    }
  }
}
