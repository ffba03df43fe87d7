package dev.csisupervisor.tests;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM running one of this module's mains on the test class path, talking over stdout lines. Killed
 * with SIGKILL through {@link ProcessHandle#destroyForcibly()}: unlike {@link Process#destroyForcibly()} that
 * leaves our end of the child's stdout open, so every line the child wrote before it died can still be read.
 */
final class ChildJvm implements AutoCloseable {
  private final Process process;
  private final BufferedReader out;
  private final Path stderr;
  private volatile boolean killed;

  private ChildJvm(Process process, Path stderr) {
    this.process = process;
    this.stderr = stderr;
    this.out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  /** Starts {@code main} with {@code args}; the child's stderr is appended to {@code stderr}. */
  static ChildJvm start(Class<?> main, Path stderr, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        // Short-lived children on 2 shared cores: start fast, stay small.
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx192m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp", System.getProperty("java.class.path"),
        main.getName()));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command)
        .redirectError(ProcessBuilder.Redirect.appendTo(stderr.toFile()))
        .start();
    return new ChildJvm(p, stderr);
  }

  /** The next stdout line, or null once the child is gone and its output drained. */
  String readLine() throws IOException {
    return out.readLine();
  }

  /** SIGKILL (on Linux); stdout stays readable. */
  void kill() {
    killed = true;
    process.toHandle().destroyForcibly();
  }

  boolean wasKilled() {
    return killed;
  }

  /** Waits for the child to be gone; returns its exit code. */
  int awaitExit() throws InterruptedException {
    if (!process.waitFor(30, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("child " + process.pid() + " did not exit within 30 s");
    }
    return process.exitValue();
  }

  /** The child's stderr so far, for failure messages (last 4000 characters). */
  String stderrTail() {
    try {
      String s = Files.readString(stderr);
      return s.length() <= 4000 ? s : "..." + s.substring(s.length() - 4000);
    } catch (IOException e) {
      return "(stderr unreadable: " + e + ")";
    }
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.toHandle().destroyForcibly();
    }
    try {
      out.close();
    } catch (IOException e) {
      // nothing left to read
    }
  }
}
