package dev.csisupervisor.volumes;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The kernel's mount table: what is mounted on this machine, as opposed to what the journal says was
 * mounted. The volume manager reads it after a restart (a reboot empties it), before it hands back a
 * recorded path, and after every unpublish or unstage the plugin reports done. {@link #proc()} reads
 * {@code /proc/self/mountinfo}; tests pass a fake. Implementations are thread-safe.
 */
public interface MountTable {
  /** A fresh reading of the table. */
  MountPoints read() throws IOException;

  /**
   * Unmounts {@code path} itself (not what lies below it): the agent's own clean-up when a node plugin is gone
   * for good ({@code unmount --force}) or an orphan mount is collected.
   *
   * @throws IOException naming the path and the system's answer if it stays mounted
   */
  void unmount(Path path) throws IOException;

  /** The real table: {@code /proc/self/mountinfo}, unmounted with {@code umount} (util-linux). */
  static MountTable proc() {
    return readFrom(Path.of("/proc/self/mountinfo"));
  }

  /** A table read from a file in {@code mountinfo} format (another process's, or a benchmark's copy). */
  static MountTable readFrom(Path mountinfo) {
    return new ProcMountTable(mountinfo, Duration.ofSeconds(30));
  }
}
