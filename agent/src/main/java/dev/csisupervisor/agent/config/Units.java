package dev.csisupervisor.agent.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the config's durations ({@code 500ms}, {@code 30s}, {@code 1m30s}); sizes are {@link dev.csisupervisor.common.ByteSizes#parse}. */
final class Units {
  private static final Pattern DURATION_PART = Pattern.compile("(\\d+)(ms|s|m|h|d)");

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
}
