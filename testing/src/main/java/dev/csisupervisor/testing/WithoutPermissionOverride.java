package dev.csisupervisor.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs a class's {@code main} in a child JVM for which file permissions apply, so that a test of
 * "permission denied" runs as root too (CI runs as root) instead of being skipped. As root the child
 * runs under {@code setpriv} without the two capabilities through which root passes every
 * permission check (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): it is still uid 0, so it reads its own
 * class path, but a file or directory of mode 000 is closed to it as to any user. As another user the
 * child simply runs as that user. The child gets the test JVM's class path.
 */
public final class WithoutPermissionOverride {
  private WithoutPermissionOverride() {}

  /** What the child printed (stdout and stderr) and its exit code. */
  public record Result(int exitCode, String output) {}

  public static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /** Runs {@code main.main(args)} in the child and waits for it to end. */
  public static Result run(Class<?> main, String... args) {
    List<String> command = new ArrayList<>();
    if (isRoot()) {
      command.addAll(List.of("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"));
    }
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
        "-cp", System.getProperty("java.class.path"), main.getName()));
    command.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true)
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
      byte[] out = p.getInputStream().readAllBytes(); // until the child ends (it holds the pipe's write end)
      return new Result(p.waitFor(), new String(out, StandardCharsets.UTF_8).strip());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
