package dev.csisupervisor.common;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
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
  void deleteQuietly_missingRoot_isNoError() {
    FileTrees.deleteQuietly(tmp.resolve("none"));
    assertFalse(Files.exists(tmp.resolve("none")));
  }
}
