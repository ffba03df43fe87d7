package dev.csisupervisor.common;

import java.time.Duration;
import java.util.Objects;

/**
 * Range checks for settings: each returns the value it was given, or throws an {@link IllegalArgumentException}
 * whose message names the field, the allowed range and the value ({@code maxBacklog must be >= 1, got 0}). A null
 * duration is a {@link NullPointerException} naming the field; callers that report nulls their own way check first.
 *
 * <p>Stateless and thread-safe.
 */
public final class Bounds {
  private Bounds() {}

  /** {@code value}, if it is at least {@code min}. */
  public static int atLeast(int value, int min, String field) {
    if (value < min) {
      throw new IllegalArgumentException(field + " must be >= " + min + ", got " + value);
    }
    return value;
  }

  /** {@code value}, if it is at least {@code min}. */
  public static long atLeast(long value, long min, String field) {
    if (value < min) {
      throw new IllegalArgumentException(field + " must be >= " + min + ", got " + value);
    }
    return value;
  }

  /** {@code value}, if it is more than zero. */
  public static long positive(long value, String field) {
    if (value <= 0) {
      throw new IllegalArgumentException(field + " must be positive, got " + value);
    }
    return value;
  }

  /** {@code value}, if it is zero or more. */
  public static long notNegative(long value, String field) {
    if (value < 0) {
      throw new IllegalArgumentException(field + " must not be negative, got " + value);
    }
    return value;
  }

  /** {@code value}, if it is from {@code min} to {@code max}, both included. */
  public static int between(int value, int min, int max, String field) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(field + " must be " + min + " to " + max + ", got " + value);
    }
    return value;
  }

  /** {@code d}, if it is longer than zero. */
  public static Duration positive(Duration d, String field) {
    if (Objects.requireNonNull(d, field).isNegative() || d.isZero()) {
      throw new IllegalArgumentException(field + " must be positive, got " + d);
    }
    return d;
  }

  /** {@code d}, if it is zero or longer. */
  public static Duration notNegative(Duration d, String field) {
    if (Objects.requireNonNull(d, field).isNegative()) {
      throw new IllegalArgumentException(field + " must not be negative, got " + d);
    }
    return d;
  }

  /** {@code value}, if it is not shorter than {@code min} ({@code maxBackoff PT1S must be >= initialBackoff PT2S}). */
  public static Duration notBelow(Duration value, String field, Duration min, String minField) {
    if (Objects.requireNonNull(value, field).compareTo(Objects.requireNonNull(min, minField)) < 0) {
      throw new IllegalArgumentException(field + " " + value + " must be >= " + minField + " " + min);
    }
    return value;
  }
}
