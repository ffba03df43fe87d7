package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.MountInfo;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The mounts of this process's mount namespace as the kernel lists them in
 * {@code /proc/self/mountinfo}: what the {@link RealMounts} mode asks before it mounts or
 * unmounts, so that its idempotency follows the kernel and not its own bookkeeping.
 *
 * <p>A line of mountinfo is {@code ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] -
 * FSTYPE SOURCE SUPER-OPTIONS}; this class keeps the 5th field, the mount point, and whether the
 * 6th, the per-mount options, say {@code ro}. The kernel escapes a space, tab, newline and
 * backslash in a path as {@code \040}, {@code \011}, {@code \012} and {@code \134}. A snapshot,
 * immutable and thread-safe.
 */
final class MountTable {

  static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

  /** One mount: where it is, and whether it is read-only. */
  record Mount(String mountPoint, boolean readOnly) {}

  private final List<Mount> mounts;

  private MountTable(List<Mount> mounts) {
    this.mounts = List.copyOf(mounts);
  }

  /** The mounts now. */
  static MountTable read() throws IOException {
    return parse(Files.readAllBytes(MOUNTINFO));
  }

  /** @throws IllegalArgumentException naming the line if one has fewer than 6 fields */
  static MountTable parse(byte[] mountinfo) {
    return new MountTable(MountInfo.parse(mountinfo).stream()
        .map(m -> new Mount(m.mountPoint(), m.readOnly())).toList());
  }

  /** A path as the kernel wrote it: every {@code \} and three octal digits is that byte. */
  static String unescape(String field) {
    return MountInfo.unescape(field);
  }

  /** Every mount, in the kernel's order (a mount after the one it covers). */
  List<Mount> mounts() {
    return mounts;
  }

  /**
   * The mount at {@code path} (after resolving symbolic links), the topmost if several are
   * stacked there; empty if the path does not exist or is not a mount point.
   */
  Optional<Mount> at(Path path) {
    Path real;
    try {
      real = path.toRealPath();
    } catch (IOException e) {
      return Optional.empty();
    }
    String wanted = real.toString();
    Mount found = null;
    for (Mount m : mounts) {
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
