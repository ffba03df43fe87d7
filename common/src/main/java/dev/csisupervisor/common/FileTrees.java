package dev.csisupervisor.common;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Removing a directory tree that nothing depends on (a temporary or demo directory).
 *
 * <p>Stateless and thread-safe.
 */
public final class FileTrees {
  private FileTrees() {}

  /**
   * Deletes {@code root} and everything under it, deepest first, as far as it can, and never throws: what cannot be
   * deleted is left (with the directories that hold it), a directory it may not read is deleted if it is empty, and a
   * missing {@code root} is no error. Symbolic links are deleted, never followed.
   */
  public static void deleteQuietly(Path root) {
    try {
      Files.walkFileTree(root, new SimpleFileVisitor<>() {
        @Override
        public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
          delete(file);
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult visitFileFailed(Path file, IOException e) {
          delete(file); // e.g. a directory it may not read: removable if empty
          return FileVisitResult.CONTINUE;
        }

        @Override
        public FileVisitResult postVisitDirectory(Path dir, IOException e) {
          delete(dir);
          return FileVisitResult.CONTINUE;
        }
      });
    } catch (IOException | RuntimeException e) {
      // Best effort: what is left stays.
    }
  }

  private static void delete(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      // Left behind, best effort: so are the directories above it.
    }
  }
}
