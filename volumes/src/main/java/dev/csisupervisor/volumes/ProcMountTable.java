package dev.csisupervisor.volumes;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The mount table read from a {@code mountinfo} file ({@code /proc/self/mountinfo}, proc(5)): the fifth field
 * of each line is the mount point, with space, tab, newline and backslash written as octal escapes
 * ({@code \040}, {@code \011}, {@code \012}, {@code \134}). Unmounts with {@code umount}. Thread-safe (no state).
 */
final class ProcMountTable implements MountTable {
  private final Path mountinfo;
  private final Duration unmountTimeout;

  ProcMountTable(Path mountinfo, Duration unmountTimeout) {
    this.mountinfo = mountinfo;
    this.unmountTimeout = unmountTimeout;
  }

  @Override
  public MountPoints read() throws IOException {
    // One read of the whole file: the kernel builds mountinfo per read() call, and a table read in pieces
    // can miss or repeat lines if the table changes in between (proc(5)).
    byte[] bytes;
    try (InputStream in = Files.newInputStream(mountinfo)) {
      bytes = in.readAllBytes();
    }
    return MountPoints.ofStrings(parse(new String(bytes, StandardCharsets.UTF_8)));
  }

  /** The mount points of a mountinfo text, unescaped, in file order. */
  static List<String> parse(String text) throws IOException {
    List<String> points = new ArrayList<>();
    int lineNo = 0;
    for (int start = 0; start < text.length(); ) {
      int end = text.indexOf('\n', start);
      if (end < 0) {
        end = text.length();
      }
      lineNo++;
      if (end > start) {
        points.add(mountPoint(text, start, end, lineNo));
      }
      start = end + 1;
    }
    return points;
  }

  private static String mountPoint(String text, int start, int end, int lineNo) throws IOException {
    int field = start;
    for (int i = 0; i < 4; i++) { // mount id, parent id, major:minor, root
      field = text.indexOf(' ', field);
      if (field < 0 || field >= end) {
        throw new IOException("mountinfo line " + lineNo + " has fewer than 5 fields: "
            + dev.csisupervisor.common.Printable.quote(text.substring(start, end)));
      }
      field++;
    }
    int stop = text.indexOf(' ', field);
    if (stop < 0 || stop > end) {
      stop = end;
    }
    String raw = text.substring(field, stop);
    return raw.indexOf('\\') < 0 ? raw : unescape(raw);
  }

  /** Undoes the kernel's octal escapes ({@code \ooo}); a backslash not followed by three octal digits stays. */
  static String unescape(String s) {
    StringBuilder out = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '\\' && isOctal(s, i + 1) && isOctal(s, i + 2) && isOctal(s, i + 3)) {
        out.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
        i += 3;
      } else {
        out.append(c);
      }
    }
    // Escapes stand for bytes: a UTF-8 name with escaped bytes is decoded as bytes, not chars.
    String decoded = out.toString();
    boolean highBytes = decoded.chars().anyMatch(ch -> ch > 0x7f && ch < 0x100);
    return highBytes ? new String(decoded.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8) : decoded;
  }

  private static boolean isOctal(String s, int i) {
    return i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '7';
  }

  @Override
  public void unmount(Path path) throws IOException {
    Process p = new ProcessBuilder("umount", path.toString()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    boolean ended;
    try {
      ended = p.waitFor(unmountTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while unmounting " + path, e);
    }
    if (!ended) {
      p.destroyForcibly();
      throw new IOException("umount " + path + " did not finish within " + unmountTimeout.toSeconds() + " s");
    }
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
    if (p.exitValue() != 0) {
      throw new IOException("umount " + path + " failed (exit " + p.exitValue() + ")"
          + (output.isEmpty() ? "" : ": " + output));
    }
  }
}
