package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileTreesTest {
  @TempDir Path tmp;

  @Test
  void deleteQuietly_removesTheTree_andLinksButNotTheirTargets() throws Exception {
    Path outside = Files.writeString(tmp.resolve("keep-me"), "x");
    Path tree = tmp.resolve("tree");
    Files.createDirectories(tree.resolve("a/b"));
    Files.writeString(tree.resolve("a/b/file"), "y");
    Files.createSymbolicLink(tree.resolve("a/link"), outside);
    Files.createSymbolicLink(tree.resolve("dirlink"), tmp);
    FileTrees.deleteQuietly(tree);
    assertFalse(Files.exists(tree));
    assertTrue(Files.exists(outside), "a link's target is not deleted");
  }

  @Test
  void deleteQuietly_unreadableDirectories_areRemovedWhenEmpty_andNeverThrow() throws Exception {
    Path tree = tmp.resolve("tree");
    Path locked = Files.createDirectories(tree.resolve("locked"));
    Path lockedFull = Files.createDirectories(tree.resolve("full/inner"));
    Files.writeString(lockedFull.resolve("f"), "z");
    Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
    Files.setPosixFilePermissions(lockedFull, PosixFilePermissions.fromString("---------"));
    FileTrees.deleteQuietly(tree);
    assertFalse(Files.exists(locked), "an empty directory needs no read permission to go");
    if (Files.exists(lockedFull)) {
      // Not root: the unreadable directory that is not empty stays, with its parents, until it may be read.
      assertTrue(Files.exists(tree.resolve("full")));
      Files.setPosixFilePermissions(lockedFull, PosixFilePermissions.fromString("rwx------"));
      FileTrees.deleteQuietly(tree);
    }
    assertFalse(Files.exists(tree));
  }

  @Test
  void deleteQuietly_missingRoot_isNoError() {
    FileTrees.deleteQuietly(tmp.resolve("none"));
    assertFalse(Files.exists(tmp.resolve("none")));
  }
}
