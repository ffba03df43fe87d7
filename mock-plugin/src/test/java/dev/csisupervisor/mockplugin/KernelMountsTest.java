package dev.csisupervisor.mockplugin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.common.MountInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Reading /proc/self/mountinfo, and running mount commands: no root needed. */
@Timeout(30)
class KernelMountsTest {

  private static final String MOUNTINFO = String.join("\n",
      "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw",
      "42 22 254:0 /tmp/data/ab /tmp/t/stage rw,relatime - ext4 /dev/vda rw",
      "43 22 254:0 /tmp/data/ab /tmp/t/pub\\040lic\\011tab\\012nl\\134bs ro,relatime master:2 - ext4 /dev/vda rw",
      "44 22 254:0 /tmp/data/ab /tmp/t/stage ro,nosuid - ext4 /dev/vda rw",
      "45 22 254:0 /x /tmp/t/caf\u00c3\u00a9 rw - ext4 /dev/vda rw",
      "46 22 254:0 /tmp/data/cd / ro,relatime - ext4 /dev/vda rw",
      "");

  private static KernelMounts table() {
    return KernelMounts.parse(MOUNTINFO.getBytes(StandardCharsets.ISO_8859_1));
  }

  @Test
  void parse_keepsTheMountPointAndWhetherItIsReadOnly() {
    List<MountInfo.Mount> mounts = table().mounts();
    assertEquals(6, mounts.size());
    assertEquals(new MountInfo.Mount("/", false), mounts.get(0));
    assertEquals(new MountInfo.Mount("/tmp/t/stage", false), mounts.get(1));
    assertEquals(new MountInfo.Mount("/tmp/t/stage", true), mounts.get(3), "per-mount ro, after optional fields");
  }

  @Test
  void parse_unescapesSpaceTabNewlineAndBackslash_andDecodesUtf8() {
    List<MountInfo.Mount> mounts = table().mounts();
    assertEquals("/tmp/t/pub lic\ttab\nnl\\bs", mounts.get(2).mountPoint());
    assertTrue(mounts.get(2).readOnly());
    assertEquals("/tmp/t/caf\u00e9", mounts.get(4).mountPoint(), "UTF-8 bytes of the path, decoded");
    assertEquals("a\\b\\04", KernelMounts.unescape("a\\b\\04"), "a backslash without three octal digits stays");
  }

  @Test
  void parse_refusesALineWithTooFewFields_namingIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> KernelMounts.parse("22 1 254:0 /\n".getBytes(StandardCharsets.ISO_8859_1)));
    assertTrue(e.getMessage().contains("'22 1 254:0 /'"), e.getMessage());
  }

  @Test
  void at_findsTheTopmostMountAtARealPath() throws IOException {
    KernelMounts table = table();
    assertEquals(new MountInfo.Mount("/", true), table.at(Path.of("/tmp/..")).orElseThrow(),
        "the last of the two at /, found by its real path");
    assertFalse(table.isMountPoint(Path.of("/tmp/t/nowhere")), "a path that does not exist is no mount point");
    assertTrue(KernelMounts.read().isMountPoint(Path.of("/proc")), "this process's table: /proc is mounted");
    assertFalse(KernelMounts.read().isMountPoint(Path.of("/proc/self")));
  }

  @Test
  void mounter_failure_namesTheCommandItsExitAndItsOutput() {
    IOException e = assertThrows(IOException.class,
        () -> Mounter.run(Duration.ofSeconds(10), "sh", "-c", "echo 'target is busy.' >&2; exit 32"));
    assertEquals("'sh -c echo 'target is busy.' >&2; exit 32' failed (exit 32): target is busy.", e.getMessage());
  }

  /**
   * A command that would outlive the test's own timeout: only the kill at the 200 ms timeout can end it in time,
   * and the message says that path was taken (a {@code sleep} waited out ends with exit 0 and no exception).
   */
  @Test
  void mounter_killsACommandThatOutlivesItsTimeout() {
    IOException e = assertThrows(IOException.class,
        () -> Mounter.run(Duration.ofMillis(200), "sleep", "600"));
    assertEquals("'sleep 600' did not finish within 200ms: killed", e.getMessage());
  }
}
