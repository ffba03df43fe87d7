package dev.csisupervisor.volumes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProcMountTableTest {
  private static final String SAMPLE = """
      22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
      36 22 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue
      37 22 98:0 /x /csi/node/p/per-alloc/a1/v/mount-rw rw - ext4 /dev/vda rw
      38 22 98:0 /x /csi/node/p/per-alloc/a1/v/block-rw rw - devtmpfs udev rw
      39 22 0:5 / /tab\\011and\\012newline\\134back rw - tmpfs tmpfs rw
      40 22 0:6 / /caf\\303\\251 rw - tmpfs tmpfs rw
      """;

  @Test
  void theFifthFieldIsTheMountPoint_withTheKernelsOctalEscapesUndone() throws IOException {
    assertEquals(List.of("/", "/mnt/with space", "/csi/node/p/per-alloc/a1/v/mount-rw",
            "/csi/node/p/per-alloc/a1/v/block-rw", "/tab\tand\nnewline\\back", "/café"),
        ProcMountTable.parse(SAMPLE.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void mountsBelowAPath_andAFileBindMount_areFound() throws IOException {
    MountPoints m = MountPoints.ofStrings(ProcMountTable.parse(SAMPLE.getBytes(StandardCharsets.UTF_8)));
    assertTrue(m.isMountPoint(Path.of("/csi/node/p/per-alloc/a1/v/block-rw")), "a block volume's file target");
    assertEquals(List.of(Path.of("/csi/node/p/per-alloc/a1/v/block-rw"), Path.of("/csi/node/p/per-alloc/a1/v/mount-rw")),
        m.below(Path.of("/csi/node/p")));
    assertEquals(List.of(), m.below(Path.of("/csi/node/p/per-alloc/a1/v/mount-r")), "a prefix of a name is not below");
    assertFalse(m.isMountPoint(Path.of("/csi/node/p")));
    assertTrue(m.hasMountAtOrBelow(Path.of("/csi")));
    assertTrue(m.isMountPoint(Path.of("/csi/node/p/per-alloc/a1/v/../v/mount-rw")), "normalized");
  }

  @Test
  void aLineWithTooFewFields_isAnErrorNamingTheLine() {
    IOException e = assertThrows(IOException.class, () -> ProcMountTable.parse("22 1 254:0 /\n".getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().contains("line 1"), e.getMessage());
  }

  @Test
  void aBackslashNotFollowedByThreeOctalDigits_staysAsItIs() {
    assertEquals("/a\\9b\\04", dev.csisupervisor.common.MountInfo.unescape("/a\\9b\\04"));
  }

  @Test
  void theRealTableOfThisProcess_isRead_andHasTheRoot() throws IOException {
    assertTrue(MountTable.proc().read().isMountPoint(Path.of("/")));
  }

  @Test
  void aTableReadFromAFile_andAnUnmountThatFails_namesThePath(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("mountinfo");
    Files.writeString(file, SAMPLE);
    ProcMountTable t = new ProcMountTable(file, Duration.ofSeconds(10));
    assertEquals(6, t.read().size());
    Path notAMount = dir.resolve("plain");
    Files.createDirectories(notAMount);
    IOException e = assertThrows(IOException.class, () -> t.unmount(notAMount));
    assertTrue(e.getMessage().contains(notAMount.toString()), e.getMessage());
  }
}
