package dev.csisupervisor.agent.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs {@code csi-agent} as a real child JVM, from this test's class path. */
final class Cli {
  private static final String JAVA =
      Path.of(System.getProperty("java.home"), "bin", "java").toString();

  private Cli() {}

  record Result(int code, String out, String err) {
    /** Asserts the exit code, and that stderr says each of {@code onStderr}. */
    Result assertExit(int expectedCode, String... onStderr) {
      assertEquals(expectedCode, code, toString());
      for (String s : onStderr) {
        assertTrue(err.contains(s), toString());
      }
      return this;
    }

    @Override
    public String toString() {
      return "exit " + code + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
  }

  static List<String> command(String... args) {
    List<String> cmd = new ArrayList<>(List.of(JAVA, "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        "dev.csisupervisor.agent.commands.Main"));
    cmd.addAll(List.of(args));
    return cmd;
  }

  /** Starts the CLI with stdout and stderr going to {@code <dir>/<name>.out|err}. */
  static Process start(Path dir, String name, String... args) throws IOException {
    return new ProcessBuilder(command(args))
        .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
        .redirectOutput(dir.resolve(name + ".out").toFile())
        .redirectError(dir.resolve(name + ".err").toFile())
        .start();
  }

  /** Runs the CLI to completion (killing it after {@code timeout}). */
  static Result run(Path dir, Duration timeout, String... args) throws Exception {
    String name = "cli-" + System.nanoTime();
    Process p = start(dir, name, args);
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly().waitFor();
      throw new AssertionError("csi-agent " + String.join(" ", args) + " did not finish in "
          + timeout + "\n" + new Result(-1, read(dir.resolve(name + ".out")),
              read(dir.resolve(name + ".err"))));
    }
    return new Result(p.exitValue(), read(dir.resolve(name + ".out")),
        read(dir.resolve(name + ".err")));
  }

  static String read(Path f) {
    try {
      return Files.exists(f) ? Files.readString(f, StandardCharsets.UTF_8) : "";
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
