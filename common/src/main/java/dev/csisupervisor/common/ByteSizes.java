package dev.csisupervisor.common;

import java.util.Locale;

/**
 * How a size in bytes reads in tables and logs: {@code 812 B}, {@code 1.5 KiB}, {@code 48.0 MiB},
 * {@code 2.0 GiB} (binary units, one decimal). Stateless and thread-safe.
 */
public final class ByteSizes {
  private ByteSizes() {}

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
