package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Reading /proc/self/mountinfo, and running mount commands: no root needed. */
@Timeout(30)
class MountTableTest {

  private static final String MOUNTINFO = String.join("\n",
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
      "42 22 254:0 /tmp/data/ab /tmp/t/stage rw,relatime - ext4 /dev/vda rw",
      "43 22 254:0 /tmp/data/ab /tmp/t/pub\\040lic\\011tab\\012nl\\134bs ro,relatime master:2 - ext4 /dev/vda rw",
      "44 22 254:0 /tmp/data/ab /tmp/t/stage ro,nosuid - ext4 /dev/vda rw",
      "45 22 254:0 /x /tmp/t/caf\u00c3\u00a9 rw - ext4 /dev/vda rw",
      "46 22 254:0 /tmp/data/cd / ro,relatime - ext4 /dev/vda rw",
      "");

  private static MountTable table() {
    return MountTable.parse(MOUNTINFO.getBytes(StandardCharsets.ISO_8859_1));
  }

  @Test
  void parse_keepsTheMountPointAndWhetherItIsReadOnly() {
    List<MountTable.Mount> mounts = table().mounts();
    assertEquals(6, mounts.size());
    assertEquals(new MountTable.Mount("/", false), mounts.get(0));
    assertEquals(new MountTable.Mount("/tmp/t/stage", false), mounts.get(1));
    assertEquals(new MountTable.Mount("/tmp/t/stage", true), mounts.get(3), "per-mount ro, after optional fields");
  }

  @Test
  void parse_unescapesSpaceTabNewlineAndBackslash_andDecodesUtf8() {
    List<MountTable.Mount> mounts = table().mounts();
    assertEquals("/tmp/t/pub lic\ttab\nnl\\bs", mounts.get(2).mountPoint());
    assertTrue(mounts.get(2).readOnly());
    assertEquals("/tmp/t/caf\u00e9", mounts.get(4).mountPoint(), "UTF-8 bytes of the path, decoded");
    assertEquals("a\\b\\04", MountTable.unescape("a\\b\\04"), "a backslash without three octal digits stays");
  }

  @Test
  void parse_refusesALineWithTooFewFields_namingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MountTable.parse("22 1 254:0 /\n".getBytes(StandardCharsets.ISO_8859_1)));
    assertTrue(e.getMessage().contains("'22 1 254:0 /'"), e.getMessage());
  }

  @Test
  void at_findsTheTopmostMountAtARealPath() throws IOException {
    MountTable table = table();
    assertEquals(new MountTable.Mount("/", true), table.at(Path.of("/tmp/..")).orElseThrow(),
        "the last of the two at /, found by its real path");
    assertFalse(table.isMountPoint(Path.of("/tmp/t/nowhere")), "a path that does not exist is no mount point");
    assertTrue(MountTable.read().isMountPoint(Path.of("/proc")), "this process's table: /proc is mounted");
    assertFalse(MountTable.read().isMountPoint(Path.of("/proc/self")));
  }

  @Test
  void mounter_failure_namesTheCommandItsExitAndItsOutput() {
    IOException e = assertThrows(IOException.class,
        () -> Mounter.run(Duration.ofSeconds(10), "sh", "-c", "echo 'target is busy.' >&2; exit 32"));
    assertEquals("'sh -c echo 'target is busy.' >&2; exit 32' failed (exit 32): target is busy.", e.getMessage());
  }

  @Test
  void mounter_killsACommandThatOutlivesItsTimeout() {
    long start = System.nanoTime();
    IOException e = assertThrows(IOException.class,
        () -> Mounter.run(Duration.ofMillis(200), "sleep", "20"));
    assertTrue(e.getMessage().contains("did not finish"), e.getMessage());
    assertTrue(Duration.ofNanos(System.nanoTime() - start).toSeconds() < 10, "not waited out");
  }
}
