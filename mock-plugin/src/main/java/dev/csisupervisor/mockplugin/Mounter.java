package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.MountInfo;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;

/**
 * {@code mount} and {@code umount} from util-linux, run as child processes: how the
 * {@link RealMounts} mode changes the kernel's mount table. A command that fails, or does not end
 * within its time, throws an {@link IOException} whose message is the command, its exit code and
 * what it printed. Stateless and thread-safe; each call blocks its thread until the command ends.
 */
final class Mounter {

  /** How long one mount or umount may take before it is killed and counted as failed. */
  static final Duration TIMEOUT = Duration.ofSeconds(30);

  private Mounter() {
  }

  /** {@code mount --bind SOURCE TARGET}: a directory onto a directory, or a file onto a file. */
  static void bind(Path source, Path target) throws IOException {
    run(TIMEOUT, "mount", "--bind", source.toString(), target.toString());
  }

  /** {@code mount -o remount,bind,ro TARGET}: the bind mount at {@code target} becomes read-only. */
  static void remountReadOnly(Path target) throws IOException {
    run(TIMEOUT, "mount", "-o", "remount,bind,ro", target.toString());
  }

  /** {@code umount TARGET}; fails if the mount is busy (a file open under it). */
  static void unmount(Path target) throws IOException {
    run(TIMEOUT, "umount", target.toString());
  }

  /** Runs {@code command} ({@link MountInfo#run}). */
  static void run(Duration timeout, String... command) throws IOException {
    MountInfo.run(timeout, command);
  }
}
