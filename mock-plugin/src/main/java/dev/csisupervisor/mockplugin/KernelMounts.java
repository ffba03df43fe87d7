package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.MountInfo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A snapshot of the mounts of this process's mount namespace as the kernel lists them in
 * {@code /proc/self/mountinfo} (parsed by {@link MountInfo}): what the {@link RealMounts} mode asks before it
 * mounts or unmounts, so that its idempotency follows the kernel and not its own bookkeeping. The mock plugin's
 * own reading of the table, not the volume manager's {@code dev.csisupervisor.volumes.MountTable} (an interface
 * the agent reads and unmounts through): hence not that name.
 *
 * <p>Each mount is its mount point (unescaped) and whether its per-mount options say {@code ro}. Immutable and
 * thread-safe.
 */
final class KernelMounts {

  static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

  private final List<MountInfo.Mount> mounts;

  private KernelMounts(List<MountInfo.Mount> mounts) {
    this.mounts = List.copyOf(mounts);
  }

  /** The mounts now. */
  static KernelMounts read() throws IOException {
    return parse(Files.readAllBytes(MOUNTINFO));
  }

  /** @throws IllegalArgumentException naming the line if one has fewer than 6 fields */
  static KernelMounts parse(byte[] mountinfo) {
    return new KernelMounts(MountInfo.parse(mountinfo));
  }

  /** A path as the kernel wrote it: every {@code \} and three octal digits is that byte. */
  static String unescape(String field) {
    return MountInfo.unescape(field);
  }

  /** Every mount, in the kernel's order (a mount after the one it covers). */
  List<MountInfo.Mount> mounts() {
    return mounts;
  }

  /**
   * The mount at {@code path} (after resolving symbolic links), the topmost if several are
   * stacked there; empty if the path does not exist or is not a mount point.
   */
  Optional<MountInfo.Mount> at(Path path) {
    Path real;
    try {
      real = path.toRealPath();
    } catch (IOException e) {
      return Optional.empty();
    }
    String wanted = real.toString();
    MountInfo.Mount found = null;
    for (MountInfo.Mount m : mounts) {
      if (m.mountPoint().equals(wanted)) {
        found = m;
      }
    }
    return Optional.ofNullable(found);
  }

  boolean isMountPoint(Path path) {
    return at(path).isPresent();
  }
}
