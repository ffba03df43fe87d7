package dev.csisupervisor.mockplugin;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * {@code mount} and {@code umount} from util-linux, run as child processes: how the
 * {@link RealMounts} mode changes the kernel's mount table. A command that fails, or does not end
 * within its time, throws an {@link IOException} whose message is the command, its exit code and
 * what it printed. Stateless and thread-safe; each call blocks its thread until the command ends.
 */
final class Mounter {

  /** How long one mount or umount may take before it is killed and counted as failed. */
  static final Duration TIMEOUT = Duration.ofSeconds(30);

  private Mounter() {
  }

  /** {@code mount --bind SOURCE TARGET}: a directory onto a directory, or a file onto a file. */
  static void bind(Path source, Path target) throws IOException {
    run(TIMEOUT, "mount", "--bind", source.toString(), target.toString());
  }

  /** {@code mount -o remount,bind,ro TARGET}: the bind mount at {@code target} becomes read-only. */
  static void remountReadOnly(Path target) throws IOException {
    run(TIMEOUT, "mount", "-o", "remount,bind,ro", target.toString());
  }

  /** {@code umount TARGET}; fails if the mount is busy (a file open under it). */
  static void unmount(Path target) throws IOException {
    run(TIMEOUT, "umount", target.toString());
  }

  /** Runs {@code command}, its stderr and stdout in one stream, and waits up to {@code timeout}. */
  static void run(Duration timeout, String... command) throws IOException {
    String line = String.join(" ", command);
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    process.getOutputStream().close();
    try {
      // Read after the exit: mount and umount print a line or two, far below a pipe's buffer.
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        throw new IOException("'" + line + "' did not finish within " + timeout.toMillis() + " ms: killed");
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
