package dev.csisupervisor.common;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.Random;

/**
 * Exponential backoff with jitter: {@code initial, initial*m, initial*m^2, ...} capped at
 * {@code max}, each delay spread uniformly by {@code ±jitter} (0.2 = ±20%) so that many plugins
 * restarted together do not probe in lock-step. Not thread-safe.
 */
public final class ExponentialBackoff implements Backoff {
  /** The project's rule for every retry loop: each delay twice the one before ... */
  private static final double DOUBLING = 2.0;
  /** ... spread by ±20%. */
  private static final double JITTER = 0.2;

  private final long initialNanos;
  private final long maxNanos;
  private final double multiplier;
  private final double jitter;
  private final Random random;
  private double nextNanos;

  ExponentialBackoff(
      Duration initial, Duration max, double multiplier, double jitter, Random random) {
    requireNonNull(initial, "initial");
    requireNonNull(max, "max");
    Bounds.positive(initial, "initial");
    Bounds.notBelow(max, "max", initial, "initial");
    if (!(multiplier >= 1.0)) {
      throw new IllegalArgumentException("multiplier must be >= 1, got " + multiplier);
    }
    if (!(jitter >= 0.0 && jitter < 1.0)) {
      throw new IllegalArgumentException("jitter must be in [0, 1), got " + jitter);
    }
    this.initialNanos = initial.toNanos();
    this.maxNanos = max.toNanos();
    this.multiplier = multiplier;
    this.jitter = jitter;
    this.random = requireNonNull(random, "random");
    this.nextNanos = initialNanos;
  }

  /**
   * The backoff every retry loop of the project uses (probes, downloads, CSI calls, pending volume
   * operations, etcd): {@code initial} doubling up to {@code max}, ±20% jitter. Only the range differs.
   */
  public static ExponentialBackoff doubling(Duration initial, Duration max, Random random) {
    return new ExponentialBackoff(initial, max, DOUBLING, JITTER, random);
  }

  @Override
  public Duration next() {
    double base = nextNanos;
    nextNanos = Math.min(maxNanos, nextNanos * multiplier);
    double spread = jitter == 0.0 ? 1.0 : 1.0 + jitter * (2 * random.nextDouble() - 1);
    return Duration.ofNanos(Math.max(1, Math.min(maxNanos, Math.round(base * spread))));
  }

  @Override
  public void reset() {
    nextNanos = initialNanos;
  }
}
