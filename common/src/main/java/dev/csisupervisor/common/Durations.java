package dev.csisupervisor.common;

import java.time.Duration;

/**
 * How a duration reads in messages and logs: short and exact, in the largest unit that divides it
 * ({@code 250µs}, {@code 500ms}, {@code 1500ms}, {@code 30s}, {@code 2m}, {@code 1h}). What it
 * prints is also what the agent's config accepts (except {@code µs}, which no setting needs).
 *
 * <p>Stateless and thread-safe.
 */
public final class Durations {
  private Durations() {}

  /**
   * {@code d} in whole hours, minutes or seconds when it is one, else in milliseconds; under a
   * millisecond, in microseconds (anything finer is dropped). Zero is {@code 0s}.
   */
  public static String format(Duration d) {
    if (d.isZero()) {
      return "0s";
    }
    long millis = d.toMillis();
    if (millis == 0) {
      return d.toNanos() / 1000 + "µs";
    }
    if (millis % 1000 != 0) {
      return millis + "ms";
    }
    long s = d.toSeconds();
    if (s % 3600 == 0) {
      return s / 3600 + "h";
    }
    return s % 60 == 0 ? s / 60 + "m" : s + "s";
  }
}
