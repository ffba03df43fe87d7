package dev.csisupervisor.tasks.process;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RotatingLogTest {
  @TempDir Path dir;

  /** {@code p.log}, already {@code size} bytes long, with these limits. */
  private RotatingLog logOf(int size, long maxBytes, int maxFiles) throws IOException {
    Path f = dir.resolve("p.log");
    Files.writeString(f, "x".repeat(size));
    return new RotatingLog(f, maxBytes, maxFiles);
  }

  @Test
  void underLimit_doesNotRotate() throws Exception {
    RotatingLog log = logOf(100, 100, 2);
    assertFalse(log.rotateIfNeeded());
    assertEquals(100, Files.size(log.file()));
    assertFalse(Files.exists(log.rotated(1)));
  }

  @Test
  void missingFile_isNotAnError() throws Exception {
    assertFalse(new RotatingLog(dir.resolve("none.log"), 10, 1).rotateIfNeeded());
  }

  @Test
  void overLimit_shiftsCopies_andDropsOldest() throws Exception {
    Path f = dir.resolve("p.log");
    RotatingLog log = new RotatingLog(f, 10, 2);
    for (String gen : new String[] {"a", "b", "c"}) {
      Files.writeString(f, gen.repeat(20));
      assertTrue(log.rotateIfNeeded());
      assertEquals(0, Files.size(f));
    }
    assertEquals("c".repeat(20), Files.readString(log.rotated(1)));
    assertEquals("b".repeat(20), Files.readString(log.rotated(2)));
    assertFalse(Files.exists(log.rotated(3)), "only maxFiles copies are kept");
  }

  @Test
  void appendingWriter_continuesAfterTruncation() throws Exception {
    Path f = dir.resolve("p.log");
    RotatingLog log = new RotatingLog(f, 10, 1);
    // As a plugin process does: one descriptor opened for append, kept open across rotation.
    try (OutputStream out = Files.newOutputStream(f, StandardOpenOption.CREATE,
        StandardOpenOption.APPEND)) {
      out.write("0123456789ABCDEF".getBytes(StandardCharsets.UTF_8));
      out.flush();
      assertTrue(log.rotateIfNeeded());
      out.write("after".getBytes(StandardCharsets.UTF_8));
      out.flush();
    }
    assertEquals("after", Files.readString(f), "no hole of zeros before the new output");
    assertEquals("0123456789ABCDEF", Files.readString(log.rotated(1)));
  }

  @Test
  void zeroMaxFiles_truncatesWithoutCopies() throws Exception {
    RotatingLog log = logOf(50, 10, 0);
    assertTrue(log.rotateIfNeeded());
    assertEquals(0, Files.size(log.file()));
    assertFalse(Files.exists(log.rotated(1)));
  }

  @Test
  void badLimits_areRejected() {
    assertThrows(IllegalArgumentException.class, () -> new RotatingLog(dir, 0, 1));
    assertThrows(IllegalArgumentException.class, () -> new RotatingLog(dir, 10, -1));
  }
}
