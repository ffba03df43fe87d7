package dev.csisupervisor.common;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Removing a directory tree that nothing depends on (a temporary or demo directory).
 *
 * <p>Stateless and thread-safe.
 */
public final class FileTrees {
  private FileTrees() {}

  /**
   * Deletes {@code root} and everything under it, deepest first, as far as it can: what cannot be
   * deleted is left (with the directories that hold it), and a missing {@code root} is no error.
   * Symbolic links are deleted, never followed.
   */
  public static void deleteQuietly(Path root) {
    try (Stream<Path> walk = Files.walk(root)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> {
        try {
          Files.deleteIfExists(p);
        } catch (IOException e) {
          // Left behind, best effort: so are the directories above it.
        }
      });
    } catch (IOException e) {
      // No such root: nothing to delete.
    }
  }
}
