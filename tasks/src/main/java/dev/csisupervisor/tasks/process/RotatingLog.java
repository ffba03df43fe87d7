package dev.csisupervisor.tasks.process;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Bounds;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * A plugin's size-bounded log file. The plugin process writes to {@link #file()} directly (opened
 * for append), so its output keeps flowing even while the agent is down and no pipe can break;
 * the agent calls {@link #rotateIfNeeded()} periodically. Rotation copies the file to
 * {@code <file>.1} (shifting older copies up to {@code <file>.<maxFiles>}, dropping the oldest)
 * and truncates it in place; a writer in append mode simply continues at the new end. Lines
 * written between the copy and the truncation are lost, and the file may exceed the limit by what
 * is written between two checks: the bound is {@code (maxFiles + 1) x (maxBytes + one check's
 * output)}.
 *
 * <p>Thread-safe (rotation is synchronized).
 */
public final class RotatingLog {
  private final Path file;
  private final long maxBytes;
  private final int maxFiles;

  public RotatingLog(Path file, long maxBytes, int maxFiles) {
    this.file = requireNonNull(file, "file");
    Bounds.atLeast(maxBytes, 1, "maxBytes");
    Bounds.atLeast(maxFiles, 0, "maxFiles");
    this.maxBytes = maxBytes;
    this.maxFiles = maxFiles;
  }

  public Path file() {
    return file;
  }

  /** The n-th rotated copy, {@code <file>.n} (1 is the newest). */
  public Path rotated(int n) {
    return file.resolveSibling(file.getFileName() + "." + n);
  }

  /**
   * Rotates if the file is larger than the limit.
   *
   * @return whether it rotated
   */
  public synchronized boolean rotateIfNeeded() throws IOException {
    long size;
    try {
      size = Files.size(file);
    } catch (java.nio.file.NoSuchFileException e) {
      return false;
    }
    if (size <= maxBytes) {
      return false;
    }
    if (maxFiles > 0) {
      Files.deleteIfExists(rotated(maxFiles));
      for (int n = maxFiles - 1; n >= 1; n--) {
        if (Files.exists(rotated(n))) {
          Files.move(rotated(n), rotated(n + 1), StandardCopyOption.REPLACE_EXISTING);
        }
      }
      Files.copy(file, rotated(1), StandardCopyOption.REPLACE_EXISTING);
    }
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.truncate(0);
    }
    return true;
  }
}
