package dev.csisupervisor.tests;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A temporary directory directly under /tmp, so that plugin socket paths stay far below the 107-byte unix limit
 * whatever java.io.tmpdir is (JUnit's @TempDir lives under it). Deleted recursively on close.
 */
final class ShortTempDir implements AutoCloseable {
  private final Path path;

  ShortTempDir(String prefix) {
    try {
      path = Files.createTempDirectory(Path.of("/tmp"), prefix);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  Path path() {
    return path;
  }

  @Override
  public void close() {
    try (Stream<Path> files = Files.walk(path)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException e) {
          // best effort: the next run gets a new directory anyway
        }
      });
    } catch (IOException e) {
      // already gone
    }
  }
}
