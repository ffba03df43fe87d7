package dev.csisupervisor.testing;

import dev.csisupervisor.common.FileTrees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A temporary directory directly under /tmp, so that plugin socket paths stay far below the 107-byte unix limit
 * whatever java.io.tmpdir is (JUnit's @TempDir lives under it). Deleted recursively, best effort, on close.
 */
public final class ShortTempDir implements AutoCloseable {
  private final Path path;

  /** A new directory {@code /tmp/<prefix><random>}. */
  public ShortTempDir(String prefix) {
    try {
      path = Files.createTempDirectory(Path.of("/tmp"), prefix);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public Path path() {
    return path;
  }

  public Path resolve(String name) {
    return path.resolve(name);
  }

  @Override
  public void close() {
    FileTrees.deleteQuietly(path); // the next run gets a new directory anyway
  }
}
