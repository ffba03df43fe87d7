package dev.csisupervisor.tasks.resources;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Reads one process's CPU time and resident memory from {@code /proc/<pid>/stat} and
 * {@code /proc/<pid>/status} (Linux). The root is a parameter so tests read fixture files.
 *
 * <p>Stateless and thread-safe.
 */
public final class ProcReader {
  /** Linux reports times in {@code /proc} in USER_HZ, 100 on every common architecture. */
  public static final long DEFAULT_TICKS_PER_SECOND = 100;
  public static final long DEFAULT_PAGE_SIZE = 4096;

  private final Path root;
  private final long ticksPerSecond;
  private final long pageSize;

  public ProcReader(Path root, long ticksPerSecond, long pageSize) {
    this.root = requireNonNull(root, "root");
    if (ticksPerSecond <= 0) {
      throw new IllegalArgumentException("ticksPerSecond must be > 0, got " + ticksPerSecond);
    }
    if (pageSize <= 0) {
      throw new IllegalArgumentException("pageSize must be > 0, got " + pageSize);
    }
    this.ticksPerSecond = ticksPerSecond;
    this.pageSize = pageSize;
  }

  /** The system's {@code /proc}. */
  public static ProcReader system() {
    return new ProcReader(Path.of("/proc"), DEFAULT_TICKS_PER_SECOND, DEFAULT_PAGE_SIZE);
  }

  public long ticksPerSecond() {
    return ticksPerSecond;
  }

  /**
   * Seconds since boot ({@code <proc>/uptime}'s first field), the clock a process's start time
   * is counted on; empty if it cannot be read.
   */
  public java.util.OptionalDouble uptimeSeconds() {
    try {
      String text = Files.readString(root.resolve("uptime"), StandardCharsets.UTF_8).strip();
      int sp = text.indexOf(' ');
      return java.util.OptionalDouble.of(Double.parseDouble(sp < 0 ? text
          : text.substring(0, sp)));
    } catch (IOException | RuntimeException e) {
      return java.util.OptionalDouble.empty();
    }
  }

  /**
   * The process's counters now, or empty if it does not exist (exited, or not visible). A
   * malformed file is reported as {@link IllegalArgumentException} naming it.
   */
  public Optional<ProcCounters> read(long pid) {
    Path dir = root.resolve(Long.toString(pid));
    String stat;
    try {
      stat = Files.readString(dir.resolve("stat"), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return Optional.empty();
    }
    ProcCounters fromStat = parseStat(pid, stat, pageSize);
    String status;
    try {
      status = Files.readString(dir.resolve("status"), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return Optional.of(fromStat); // gone between the two reads, or not readable: stat's RSS
    }
    long rss = parseStatusRss(status);
    return Optional.of(rss < 0 ? fromStat
        : new ProcCounters(pid, fromStat.cpuTicks(), rss, fromStat.startTicks()));
  }

  /**
   * Parses {@code /proc/<pid>/stat}: utime + stime (fields 14 and 15) and starttime (22), and
   * rss (24, in pages). The command name (field 2) is in parentheses and may itself contain
   * spaces and parentheses, so fields are counted from the last {@code ')'}.
   *
   * @throws IllegalArgumentException if the text is not a stat line
   */
  static ProcCounters parseStat(long pid, String text, long pageSize) {
    int close = text.lastIndexOf(')');
    if (close < 0) {
      throw new IllegalArgumentException("/proc/" + pid + "/stat has no command name: "
          + abbreviate(text));
    }
    String[] f = text.substring(close + 1).strip().split("\\s+");
    // f[0] is field 3 (state); field n is f[n - 3].
    if (f.length < 22) {
      throw new IllegalArgumentException("/proc/" + pid + "/stat has " + (f.length + 2)
          + " fields, expected at least 24: " + abbreviate(text));
    }
    try {
      long utime = Long.parseLong(f[14 - 3]);
      long stime = Long.parseLong(f[15 - 3]);
      long start = Long.parseLong(f[22 - 3]);
      long rssPages = Long.parseLong(f[24 - 3]);
      return new ProcCounters(pid, utime + stime, Math.max(0, rssPages) * pageSize, start);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("/proc/" + pid + "/stat has a non-numeric field: "
          + abbreviate(text), e);
    }
  }

  /** {@code VmRSS} of {@code /proc/<pid>/status} in bytes, or -1 if absent (kernel threads). */
  static long parseStatusRss(String text) {
    for (String line : text.split("\n")) {
      if (line.startsWith("VmRSS:")) {
        String[] parts = line.substring("VmRSS:".length()).strip().split("\\s+");
        try {
          long n = Long.parseLong(parts[0]);
          String unit = parts.length > 1 ? parts[1] : "kB";
          return switch (unit) {
            case "kB" -> n * 1024;
            case "mB", "MB" -> n * 1024 * 1024;
            default -> n;
          };
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    }
    return -1;
  }

  private static String abbreviate(String s) {
    String t = s.strip();
    return t.length() <= 80 ? t : t.substring(0, 80) + "...";
  }

  /**
   * One process's counters.
   *
   * @param pid        the process
   * @param cpuTicks   user + system CPU time, in clock ticks
   * @param rssBytes   resident memory
   * @param startTicks when it started, in ticks after boot (tells a reused pid apart)
   */
  public record ProcCounters(long pid, long cpuTicks, long rssBytes, long startTicks) {}
}
