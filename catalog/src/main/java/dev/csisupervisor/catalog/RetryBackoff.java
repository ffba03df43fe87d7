package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;
import java.util.Objects;
import java.util.Random;

/**
 * The retry policy after an etcd failure: {@code initial}, doubling up to {@code max}, each delay spread by ±20% so
 * that many nodes cut off together do not come back in lock-step. Not thread-safe (one owner thread).
 */
final class RetryBackoff {
  private final Duration initial;
  private final Duration max;
  private final Random random;
  private Duration next;

  RetryBackoff(Duration initial, Duration max, Random random) {
    check(initial, max);
    this.initial = initial;
    this.max = max;
    this.random = Objects.requireNonNull(random, "random");
    this.next = initial;
  }

  /** The rule for a backoff range, shared by the builders that take one. */
  static void check(Duration initial, Duration max) {
    Bounds.positive(initial, "initialBackoff");
    Bounds.notBelow(max, "maxBackoff", initial, "initialBackoff");
  }

  /** The delay before the next attempt. */
  Duration next() {
    Duration base = next;
    next = next.multipliedBy(2).compareTo(max) > 0 ? max : next.multipliedBy(2);
    double spread = 0.8 + 0.4 * random.nextDouble();
    return Duration.ofMillis(Math.max(1, Math.round(base.toMillis() * spread)));
  }

  /** After a success: the next failure waits {@code initial} again. */
  void reset() {
    next = initial;
  }
}
