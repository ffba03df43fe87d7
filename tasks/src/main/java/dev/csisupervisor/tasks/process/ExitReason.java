package dev.csisupervisor.tasks.process;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/** Why a plugin process exited, in words for its last-failure line. */
public final class ExitReason {
  private ExitReason() {}

  /** {@code " (SIGKILL)"} for an exit code of 128 + a common signal, else empty. */
  public static String signal(int code) {
    return switch (code) {
      case 129 -> " (SIGHUP)";
      case 130 -> " (SIGINT)";
      case 134 -> " (SIGABRT)";
      case 137 -> " (SIGKILL)";
      case 139 -> " (SIGSEGV)";
      case 143 -> " (SIGTERM)";
      default -> "";
    };
  }

  /**
   * The last line the process wrote to its log since it was launched, as a hint of why it exited:
   * {@code "; last log line: <line>"} (at most 200 characters), or empty.
   */
  public static String lastLogLine(Path logFile) throws IOException {
    try (var f = new RandomAccessFile(logFile.toFile(), "r")) {
      long len = f.length();
      int n = (int) Math.min(len, 2048);
      byte[] buf = new byte[n];
      f.seek(len - n);
      f.readFully(buf);
      String[] lines = new String(buf, StandardCharsets.UTF_8).split("\n");
      for (int i = lines.length - 1; i >= 0; i--) {
        String l = lines[i].strip();
        if (l.startsWith(LaunchedProcess.LOG_HEADER)) {
          return ""; // nothing written since this launch
        }
        if (!l.isEmpty()) {
          return "; last log line: " + (l.length() > 200 ? l.substring(0, 200) + "…" : l);
        }
      }
    }
    return "";
  }
}
