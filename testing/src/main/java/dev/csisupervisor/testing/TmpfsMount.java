package dev.csisupervisor.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A small tmpfs mounted for one test, to fill up for real (a full disk). Mounting needs root: where
 * it cannot be mounted the test is skipped (JUnit assumption) with mount's own message as the
 * reason. {@link #close()} unmounts it.
 */
public final class TmpfsMount implements AutoCloseable {
  private final Path dir;

  private TmpfsMount(Path dir) {
    this.dir = dir;
  }

  /**
   * Mounts a tmpfs of {@code size} (as mount writes it: {@code 1m}, {@code 512k}) at {@code dir},
   * created if missing, mode 0700.
   */
  public static TmpfsMount mount(Path dir, String size) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0700", "tmpfs",
        dir.toString()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    Assumptions.assumeTrue(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0,
        "cannot mount a tmpfs to fill (needs root): " + out.trim());
    return new TmpfsMount(dir);
  }

  /** Where it is mounted. */
  public Path dir() {
    return dir;
  }

  @Override
  public void close() throws IOException {
    try {
      new ProcessBuilder("umount", dir.toString()).start().waitFor(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while unmounting " + dir, e);
    }
  }
}
