package dev.csisupervisor.agent.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the config's durations ({@code 500ms}, {@code 30s}, {@code 1m30s}) and sizes ({@code 10MiB}). */
public final class Units {
  private static final Pattern DURATION_PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");
  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmg]i?b?|b)?",
      Pattern.CASE_INSENSITIVE);

  private Units() {}

  /**
   * A duration like {@code 250ms}, {@code 30s}, {@code 5m}, {@code 1h}, {@code 1m30s}, or
   * ISO-8601 ({@code PT30S}); a bare {@code 0} is zero.
   *
   * @throws IllegalArgumentException with a message saying what is accepted
   */
  static Duration duration(String text) {
    String s = text.strip();
    if (s.equals("0")) {
      return Duration.ZERO;
    }
    if (s.startsWith("P") || s.startsWith("p")) {
      try {
        return Duration.parse(s.toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException e) {
        throw badDuration(text);
      }
    }
    Matcher m = DURATION_PART.matcher(s);
    Duration total = Duration.ZERO;
    int pos = 0;
    while (pos < s.length()) {
      if (!m.find(pos) || m.start() != pos) {
        throw badDuration(text);
      }
      long n;
      try {
        n = Long.parseLong(m.group(1));
      } catch (NumberFormatException e) {
        throw badDuration(text);
      }
      total = total.plus(switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      });
      pos = m.end();
    }
    if (pos == 0) {
      throw badDuration(text);
    }
    return total;
  }

  private static IllegalArgumentException badDuration(String text) {
    return new IllegalArgumentException("'" + text + "' is not a duration"
        + " (use a number with a unit: 500ms, 30s, 5m, 1h, 1m30s)");
  }

  /** A size like {@code 1048576}, {@code 512KiB}, {@code 10MiB}, {@code 1GiB} (K/M/G are binary). */
  public static long size(String text) {
    Matcher m = SIZE.matcher(text.strip());
    if (!m.matches()) {
      throw new IllegalArgumentException("'" + text + "' is not a size (use bytes or 512KiB, 10MiB, 1GiB)");
    }
    long n;
    try {
      n = Long.parseLong(m.group(1));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("'" + text + "' is too large");
    }
    String unit = m.group(2) == null ? "b" : m.group(2).toLowerCase(Locale.ROOT);
    long factor = switch (unit.charAt(0)) {
      case 'k' -> 1024L;
      case 'm' -> 1024L * 1024;
      case 'g' -> 1024L * 1024 * 1024;
      default -> 1L;
    };
    try {
      return Math.multiplyExact(n, factor);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("'" + text + "' is too large");
    }
  }
}
