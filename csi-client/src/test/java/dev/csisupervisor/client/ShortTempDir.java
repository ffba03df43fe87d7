package dev.csisupervisor.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A temporary directory directly under /tmp, so socket paths stay far below the 107-byte unix
 * limit whatever java.io.tmpdir is. Deleted (recursively) on close.
 */
final class ShortTempDir implements AutoCloseable {
  private final Path path;

  ShortTempDir() {
    try {
      path = Files.createTempDirectory(Path.of("/tmp"), "csic");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  Path path() {
    return path;
  }

  Path resolve(String name) {
    return path.resolve(name);
  }

  @Override
  public void close() {
    try (Stream<Path> files = Files.walk(path)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          p.toFile().setWritable(true);
          Files.deleteIfExists(p);
        } catch (IOException e) {
          // best effort: the next test run gets a new directory anyway
        }
      });
    } catch (IOException e) {
      // already gone
    }
  }
}
