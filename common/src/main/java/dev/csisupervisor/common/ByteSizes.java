package dev.csisupervisor.common;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sizes in bytes as people write and read them: {@link #parse} takes what a config or a command line says
 * ({@code 10MiB}), {@link #format} writes what tables and logs show ({@code 48.0 MiB}). Binary units.
 * Stateless and thread-safe.
 */
public final class ByteSizes {
  private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmg]i?b?|b)?", Pattern.CASE_INSENSITIVE);

  private ByteSizes() {}

  /**
   * A size like {@code 1048576}, {@code 512KiB}, {@code 10MiB}, {@code 1GiB} (K/M/G are binary).
   *
   * @throws IllegalArgumentException saying what is accepted, or that the size is too large
   */
  public static long parse(String text) {
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

  /** {@code 812 B}, {@code 1.5 KiB}, {@code 48.0 MiB}, {@code 2.0 GiB}: one decimal. */
  public static String format(long bytes) {
    if (bytes >= 1024L * 1024 * 1024) {
      return String.format(Locale.ROOT, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    }
    if (bytes >= 1024L * 1024) {
      return String.format(Locale.ROOT, "%.1f MiB", bytes / (1024.0 * 1024));
    }
    if (bytes >= 1024) {
      return String.format(Locale.ROOT, "%.1f KiB", bytes / 1024.0);
    }
    return bytes + " B";
  }
}
