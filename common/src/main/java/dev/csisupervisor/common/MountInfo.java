package dev.csisupervisor.common;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The kernel's mount table as {@code /proc/<pid>/mountinfo} (proc(5)) writes it, and the util-linux commands
 * that change it: what the volume manager and the mock plugin's real-mount mode both read and run, written once.
 * A line is {@code ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER-OPTIONS};
 * a path's space, tab, newline and backslash are octal escapes ({@code \040}, {@code \011}, {@code \012},
 * {@code \134}), and its bytes are UTF-8. Stateless and thread-safe.
 */
public final class MountInfo {
  private MountInfo() {}

  /** One line: where the mount is, and whether its per-mount options say {@code ro}. */
  public record Mount(String mountPoint, boolean readOnly) {}

  /**
   * Every line's mount, in the kernel's order (a mount after the one it covers).
   *
   * @throws IllegalArgumentException naming the line (by number) that has fewer than 6 fields
   */
  public static List<Mount> parse(byte[] mountinfo) {
    // Latin-1 keeps every byte one char, so a UTF-8 path survives until unescape decodes it.
    String text = new String(mountinfo, StandardCharsets.ISO_8859_1);
    List<Mount> mounts = new ArrayList<>();
    int lineNo = 0;
    for (int start = 0; start < text.length(); ) {
      int end = text.indexOf('\n', start);
      if (end < 0) {
        end = text.length();
      }
      lineNo++;
      if (end > start) {
        mounts.add(mount(text, start, end, lineNo));
      }
      start = end + 1;
    }
    return mounts;
  }

  private static Mount mount(String text, int start, int end, int lineNo) {
    int field = start;
    for (int i = 0; i < 4; i++) { // mount id, parent id, major:minor, root
      field = nextField(text, start, field, end, lineNo);
    }
    int options = nextField(text, start, field, end, lineNo);
    int optionsEnd = text.indexOf(' ', options);
    if (optionsEnd < 0 || optionsEnd > end) {
      optionsEnd = end;
    }
    String point = text.substring(field, options - 1);
    boolean readOnly = (',' + text.substring(options, optionsEnd) + ',').contains(",ro,");
    return new Mount(point.indexOf('\\') < 0 && isAscii(point) ? point : unescape(point), readOnly);
  }

  private static int nextField(String text, int lineStart, int from, int end, int lineNo) {
    int space = text.indexOf(' ', from);
    if (space < 0 || space >= end) {
      throw new IllegalArgumentException("mountinfo line " + lineNo + " has fewer than 6 fields: "
          + Printable.quote(text.substring(lineStart, end)));
    }
    return space + 1;
  }

  private static boolean isAscii(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) > 0x7f) {
        return false;
      }
    }
    return true;
  }

  /** A path as the kernel wrote it (chars are bytes): every {@code \} and three octal digits is that byte. */
  public static String unescape(String field) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(field.length());
    for (int i = 0; i < field.length(); i++) {
      char c = field.charAt(i);
      if (c == '\\' && isOctal(field, i + 1) && isOctal(field, i + 2) && isOctal(field, i + 3)) {
        bytes.write(Integer.parseInt(field.substring(i + 1, i + 4), 8));
        i += 3;
      } else {
        bytes.write(c);
      }
    }
    return bytes.toString(StandardCharsets.UTF_8);
  }

  private static boolean isOctal(String s, int i) {
    return i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '7';
  }

  /**
   * Runs a util-linux command ({@code mount}, {@code umount}), its stderr and stdout in one stream, waiting up to
   * {@code timeout} (then it is killed).
   *
   * @throws IOException naming the command, its exit code and what it printed, if it fails or does not end
   */
  public static void run(Duration timeout, String... command) throws IOException {
    String line = String.join(" ", command);
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getOutputStream().close();
    try {
      // Read after the exit: mount and umount print a line or two, far below a pipe's buffer.
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        throw new IOException("'" + line + "' did not finish within " + Durations.format(timeout) + ": killed");
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("'" + line + "' interrupted", e);
    }
    String output;
    try (InputStream out = process.getInputStream()) {
      output = new String(out.readAllBytes(), StandardCharsets.UTF_8).strip();
    }
    if (process.exitValue() != 0) {
      throw new IOException("'" + line + "' failed (exit " + process.exitValue() + ")"
          + (output.isEmpty() ? "" : ": " + output));
    }
  }
}
