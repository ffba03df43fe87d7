package dev.csisupervisor.volumes;

import dev.csisupervisor.common.MountInfo;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The mount table read from a {@code mountinfo} file ({@code /proc/self/mountinfo}, proc(5), parsed by
 * {@link MountInfo}); unmounts with {@code umount}. Thread-safe (no state).
 */
final class ProcMountTable implements MountTable {
  private final Path mountinfo;
  private final Duration unmountTimeout;

  ProcMountTable(Path mountinfo, Duration unmountTimeout) {
    this.mountinfo = mountinfo;
    this.unmountTimeout = unmountTimeout;
  }

  @Override
  public MountPoints read() throws IOException {
    // One read of the whole file: the kernel builds mountinfo per read() call, and a table read in pieces
    // can miss or repeat lines if the table changes in between (proc(5)).
    byte[] bytes;
    try (InputStream in = Files.newInputStream(mountinfo)) {
      bytes = in.readAllBytes();
    }
    return MountPoints.ofStrings(parse(bytes));
  }

  /** The mount points of a mountinfo text, unescaped, in file order. */
  static List<String> parse(byte[] text) throws IOException {
    try {
      return MountInfo.parse(text).stream().map(MountInfo.Mount::mountPoint).toList();
    } catch (IllegalArgumentException e) {
      throw new IOException(e.getMessage(), e);
    }
  }

  @Override
  public void unmount(Path path) throws IOException {
    MountInfo.run(unmountTimeout, "umount", path.toString());
  }
}
