package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;
import java.util.concurrent.Executor;

/**
 * Every file operation by which the store changes its files: the seam a test stands in to fail an operation or to
 * record them all and work out what a power cut would leave ({@code CrashSimulator} in the tests). Writes at a
 * position, forces and truncations are calls on the channel {@link #open} returns; the rest are here. Reads (open's
 * replay, MapDB's reads of a checkpoint) and the bytes MapDB writes into a checkpoint's temporary file go to the
 * file system directly: a checkpoint file is created through {@link #open} and forced through it, so the seam sees
 * it made and made durable. The lock file, which holds no data, is opened directly too.
 *
 * <p>{@link #DEFAULT} is the JDK's calls and nothing else: a commit's write and force are calls on a plain
 * {@link FileChannel}, no copy and no extra system call. Implementations are thread-safe: the store calls them from
 * the committing thread, the segment preparer and the checkpoint thread at once.
 */
interface StateIo {

  /** The file system as it is. */
  StateIo DEFAULT = FileChannel::open;

  /** Opens a file ({@code CREATE_NEW} creates one): writes at a position, forces and truncations go to the channel. */
  FileChannel open(Path path, Set<? extends OpenOption> options) throws IOException;

  /** Writes {@code length} zero bytes at {@code from}: a segment's blocks allocated before any batch needs them. */
  default void preallocate(FileChannel file, long from, long length) throws IOException {
    for (long at = from, end = from + length; at < end; ) {
      ByteBuffer zeros = SegmentPipeline.ZEROS.duplicate();
      zeros.limit((int) Math.min(zeros.capacity(), end - at));
      at += file.write(zeros, at);
    }
  }

  /** Renames atomically, replacing {@code to}; durable once the parent directory is forced. */
  default void rename(Path from, Path to) throws IOException {
    Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
  }

  /** Deletes a file if it exists; durable once the parent directory is forced. */
  default void delete(Path path) throws IOException {
    Files.deleteIfExists(path);
  }

  /** Creates a directory, mode 0700 where the file system has POSIX permissions; durable once its parent is forced. */
  default void createDirectory(Path dir) throws IOException {
    try {
      Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(StateDirectory.DIR_MODE));
    } catch (UnsupportedOperationException e) {
      Files.createDirectory(dir);
    }
  }

  /** Forces a directory: the names created, renamed and deleted in it survive a power cut. */
  default void syncDirectory(Path dir) throws IOException {
    try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
      channel.force(true);
    }
  }

  /**
   * Where the next segment is prepared: null for the store's own background thread. Tests return an executor that
   * runs the preparation at a known point.
   */
  default Executor segmentPreparer() {
    return null;
  }

  /**
   * Where background checkpoints run: null for the store's own thread. Tests return an executor that runs them at a
   * known point.
   */
  default Executor checkpointRunner() {
    return null;
  }
}
