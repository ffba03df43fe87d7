package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.MountInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;

/** What the real-mount tests ask of the kernel, and the clean-up that leaves no mount behind. */
final class TestMounts {

  private TestMounts() {
  }

  /** Whether this JVM runs with effective uid 0, as {@link RealMounts} requires. */
  static boolean isRoot() {
    return effectiveUid() == 0;
  }

  static long effectiveUid() {
    try {
      return RealMounts.effectiveUid();
    } catch (IOException e) {
      return -1;
    }
  }

  /** How many mounts the kernel lists at {@code path} (stacked mounts count each). */
  static long mountsAt(Path path) throws IOException {
    String real = path.toRealPath().toString();
    return KernelMounts.read().mounts().stream().filter(m -> m.mountPoint().equals(real)).count();
  }

  static boolean isMountPoint(Path path) throws IOException {
    return KernelMounts.read().isMountPoint(path);
  }

  /** {@code umount} behind the plugin's back, as a reboot would. */
  static void unmount(Path path) throws IOException {
    Mounter.unmount(path);
  }

  /**
   * Every mount at or below {@code dir} detached ({@code umount -l}), deepest first, until none is
   * left: what a test's clean-up calls, so that a failed test leaves no mount behind.
   */
  static void unmountAllUnder(Path dir) {
    String root;
    try {
      root = dir.toRealPath().toString();
    } catch (IOException e) {
      return; // gone: nothing can be mounted there
    }
    for (int round = 0; round < 10; round++) {
      List<String> under;
      try {
        under = KernelMounts.read().mounts().stream().map(MountInfo.Mount::mountPoint)
            .filter(p -> p.equals(root) || p.startsWith(root + "/"))
            .sorted(Comparator.reverseOrder()).toList();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      if (under.isEmpty()) {
        return;
      }
      for (String mountPoint : under) {
        try {
          Mounter.run(Mounter.TIMEOUT, "umount", "-l", mountPoint);
        } catch (IOException e) {
          // Already gone with a mount above it; the next round sees what is left.
        }
      }
    }
    throw new AssertionError("mounts left under " + root + " after 10 rounds of umount -l");
  }
}
