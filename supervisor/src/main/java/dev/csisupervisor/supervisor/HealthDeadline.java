package dev.csisupervisor.supervisor;

import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A hook's health deadline: armed while its plugin is not healthy (not ready after a start, or failing
 * probes once registered), disarmed when it is healthy; when it passes, the hook decides (under its lock)
 * whether to request a restart. A health timeout of zero never arms. Guarded by the hook's lock.
 */
final class HealthDeadline {
  private final ScheduledExecutorService scheduler;
  private final Duration timeout;
  private final Runnable passed;
  private ScheduledFuture<?> timer;

  /** @param passed run on the scheduler when an armed deadline passes; it takes the hook's lock itself */
  HealthDeadline(ScheduledExecutorService scheduler, Duration timeout, Runnable passed) {
    this.scheduler = scheduler;
    this.timeout = timeout;
    this.passed = passed;
  }

  /** A whole timeout from now (a deadline already armed starts again). */
  void arm() {
    disarm();
    if (!timeout.isZero()) {
      timer = scheduler.schedule(passed, timeout.toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  void disarm() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  /** Called by {@code passed}, under the hook's lock: the deadline is no longer armed. */
  void expired() {
    timer = null;
  }
}
