package dev.csisupervisor.benchmarks;

import java.util.Arrays;
import java.util.Locale;

/**
 * Percentiles of a set of nanosecond samples, by sorting them (nearest-rank). Immutable; the
 * samples are copied.
 * Not thread-safe to build; immutable once built.
 */
final class Stats {
  private final long[] sortedNanos;

  Stats(long[] nanos) {
    if (nanos.length == 0) {
      throw new IllegalArgumentException("nanos must not be empty");
    }
    sortedNanos = nanos.clone();
    Arrays.sort(sortedNanos);
  }

  static Stats of(long[] nanos, int count) {
    return new Stats(Arrays.copyOf(nanos, count));
  }

  int count() {
    return sortedNanos.length;
  }

  /** Nearest-rank percentile, {@code p} in (0, 100]. */
  long percentile(double p) {
    if (p <= 0 || p > 100) {
      throw new IllegalArgumentException("p must be in (0, 100], got " + p);
    }
    int rank = (int) Math.ceil(p / 100.0 * sortedNanos.length);
    return sortedNanos[Math.max(0, rank - 1)];
  }

  long p50() {
    return percentile(50);
  }

  long p99() {
    return percentile(99);
  }

  /** How many samples are at or above {@code nanos}. */
  int countAtLeast(long nanos) {
    int i = java.util.Arrays.binarySearch(sortedNanos, nanos);
    if (i < 0) {
      return sortedNanos.length - (-i - 1);
    }
    while (i > 0 && sortedNanos[i - 1] == nanos) {
      i--;
    }
    return sortedNanos.length - i;
  }

  long min() {
    return sortedNanos[0];
  }

  long max() {
    return sortedNanos[sortedNanos.length - 1];
  }

  /** "p50 1.23 ms, p99 4.56 ms (min 0.98, max 7.01, n=200)". */
  String describeMillis() {
    return String.format(Locale.ROOT, "p50 %s ms, p99 %s ms (min %s, max %s, n=%d)",
        ms(p50()), ms(p99()), ms(min()), ms(max()), count());
  }

  String describeMicros() {
    return String.format(Locale.ROOT, "p50 %s µs, p99 %s µs (min %s, max %s, n=%d)",
        us(p50()), us(p99()), us(min()), us(max()), count());
  }

  static String ms(long nanos) {
    return String.format(Locale.ROOT, "%.2f", nanos / 1e6);
  }

  static String us(long nanos) {
    return String.format(Locale.ROOT, "%.1f", nanos / 1e3);
  }
}
