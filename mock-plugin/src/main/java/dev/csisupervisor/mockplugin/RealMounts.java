package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.FileTrees;
import dev.csisupervisor.common.MountInfo;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The in-memory driver's real-mount mode ({@link MockCsiPlugin.Builder#realMounts},
 * {@code --real-mounts DIR}), as kubernetes-csi hostpath does it: a volume's data is the directory
 * {@code DIR/<sha256 of its id>} (for a block volume, the sparse file {@code DIR/<sha256>.img}),
 * made on its first stage or publish; {@link DriverNode} has it bind-mounted where the CO asks and
 * unmounted when the CO is done.
 *
 * <p>Whether a path is mounted is asked of the kernel ({@link KernelMounts}), not of the driver's
 * bookkeeping: a stage or publish whose mount is already there is not mounted twice, and one whose
 * mount vanished (a reboot) is mounted again. Mounting runs {@code mount} and {@code umount}
 * ({@link Mounter}) on the caller's thread. Failures are the gRPC statuses the call answers with.
 *
 * <p>Needs root: {@link #prepare()} refuses to start otherwise. Not thread-safe by itself: the
 * driver's sides call it under the driver's lock.
 */
final class RealMounts {

  private static final Logger log = LoggerFactory.getLogger(RealMounts.class);

  /** Size of a block volume's backing file when the volume has no capacity. */
  static final long DEFAULT_BLOCK_BYTES = 1L << 20;

  /** Where the effective uid comes from: this process's, or a test's. */
  @FunctionalInterface
  interface UidSource {
    long effectiveUid() throws IOException;
  }

  private final Path dataDir;
  private final UidSource uid;

  RealMounts(Path dataDir, UidSource uid) {
    this.dataDir = Objects.requireNonNull(dataDir, "realMounts").toAbsolutePath().normalize();
    this.uid = Objects.requireNonNull(uid, "uid");
  }

  /**
   * Before the plugin serves: checks that it may mount, and creates the data directory if missing.
   *
   * @throws IOException naming the option if the process is not root, or naming the directory
   */
  void prepare() throws IOException {
    requireRoot(uid.effectiveUid());
    Files.createDirectories(dataDir);
  }

  static void requireRoot(long effectiveUid) throws IOException {
    if (effectiveUid != 0) {
      throw new IOException("real mounts (realMounts, --real-mounts DIR) need root to mount volumes: this process"
          + " runs with effective uid " + effectiveUid);
    }
  }

  /** This process's effective uid, from {@code /proc/self/status}. */
  static long effectiveUid() throws IOException {
    return effectiveUid(Files.readString(Path.of("/proc/self/status")));
  }

  /** The effective uid in a {@code /proc/PID/status} text: its line {@code Uid: REAL EFFECTIVE SAVED FS}. */
  static long effectiveUid(String status) throws IOException {
    for (String line : status.split("\n")) {
      String[] f = line.strip().split("\\s+");
      if (f[0].equals("Uid:") && f.length >= 3) {
        try {
          return Long.parseLong(f[2]);
        } catch (NumberFormatException e) {
          throw new IOException("process status has a malformed Uid line: '" + line + "'");
        }
      }
    }
    throw new IOException("process status has no Uid line");
  }

  /** Where every volume's data is. */
  Path dataDir() {
    return dataDir;
  }

  /** The directory that holds a mount volume's data. */
  Path backingDir(String volumeId) {
    return dataDir.resolve(sha256(volumeId));
  }

  /** The file that is a block volume's device. */
  Path backingFile(String volumeId) {
    return dataDir.resolve(sha256(volumeId) + ".img");
  }

  // ---- the node calls, under the driver's lock --------------------------------------------

  /**
   * NodeStageVolume: a mount volume's data directory is bind-mounted on {@code staging}, unless
   * something is mounted there already; a block volume only gets its backing file.
   *
   * @return whether this call mounted (what a failed save must undo)
   */
  boolean stage(MockVolume v, Path staging, boolean block) {
    if (block) {
      backingFileOf(v);
      return false;
    }
    if (!Files.isDirectory(staging)) {
      throw Status.FAILED_PRECONDITION.withDescription("staging_target_path " + staging
          + " is not a directory: the CO creates it before NodeStageVolume").asRuntimeException();
    }
    if (mountAt(staging).isPresent()) {
      return false;
    }
    bind(v, backingDirOf(v), staging);
    return true;
  }

  /** NodePublishVolume of a mount volume: the staging path must be mounted (FAILED_PRECONDITION). */
  void requireStaged(MockVolume v, Path staging) {
    if (mountAt(staging).isEmpty()) {
      throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id + " is not staged at " + staging
          + " (not a mount point)").asRuntimeException();
    }
  }

  /**
   * NodePublishVolume onto an existing {@code target}: bind-mounts the volume there (from
   * {@code staging} if it was staged, else from its data; a block volume from its backing file),
   * read-only if asked, unless something is mounted there already. A mount that is there with the
   * other readonly flag is ALREADY_EXISTS.
   *
   * @param staging the staging path of a staged mount volume; null to mount the data itself
   * @return whether this call mounted (what a failed save must undo)
   */
  boolean publish(MockVolume v, Path staging, Path target, boolean block, boolean readonly) {
    Optional<MountInfo.Mount> existing = mountAt(target);
    if (existing.isPresent()) {
      if (existing.get().readOnly() != readonly) {
        throw Status.ALREADY_EXISTS.withDescription("volume " + v.id + " is already mounted at " + target
            + (readonly ? " read-write" : " read-only")).asRuntimeException();
      }
      return false;
    }
    Path source = block ? backingFileOf(v) : staging != null ? staging : backingDirOf(v);
    bind(v, source, target);
    if (readonly) {
      try {
        Mounter.remountReadOnly(target);
      } catch (IOException e) {
        unmountQuietly(target);
        throw internal("cannot make volume " + v.id + " read-only at " + target, e);
      }
    }
    return true;
  }

  /** Unmounts {@code path} if it is a mount point; INTERNAL with umount's message if that fails. */
  void unmount(MockVolume v, Path path) {
    if (mountAt(path).isEmpty()) {
      return;
    }
    try {
      Mounter.unmount(path);
    } catch (IOException e) {
      throw internal("cannot unmount volume " + v.id + " at " + path, e);
    }
  }

  /** Undoes a mount this call made; a failure is only logged (the call fails anyway). */
  void unmountQuietly(Path path) {
    try {
      Mounter.unmount(path);
    } catch (IOException e) {
      log.warn("cannot undo the mount at {}: {}", path, e.getMessage());
    }
  }

  /** The bytes the files in a mount volume's data directory hold; 0 if it has none (yet). */
  long usedBytes(String volumeId) {
    Path dir = backingDir(volumeId);
    if (!Files.isDirectory(dir)) {
      return 0;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files.filter(Files::isRegularFile).mapToLong(RealMounts::size).sum();
    } catch (IOException | UncheckedIOException e) {
      throw Status.INTERNAL.withDescription("cannot measure " + dir + ": " + e).asRuntimeException();
    }
  }

  /** DeleteVolume: the volume's data goes too (best effort), so that no later volume finds it. */
  void deleteData(String volumeId) {
    FileTrees.deleteQuietly(backingDir(volumeId));
    FileTrees.deleteQuietly(backingFile(volumeId));
  }

  // ---- helpers ----------------------------------------------------------------------------

  private void bind(MockVolume v, Path source, Path target) {
    try {
      Mounter.bind(source, target);
    } catch (IOException e) {
      throw internal("cannot mount volume " + v.id + " at " + target, e);
    }
  }

  private static Optional<MountInfo.Mount> mountAt(Path path) {
    try {
      return KernelMounts.read().at(path);
    } catch (IOException e) {
      throw internal("cannot read " + KernelMounts.MOUNTINFO, e);
    }
  }

  private Path backingDirOf(MockVolume v) {
    Path dir = backingDir(v.id);
    try {
      if (!Files.isDirectory(dir)) {
        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      }
    } catch (IOException e) {
      throw internal("cannot create the data directory of volume " + v.id, e);
    }
    return dir;
  }

  private Path backingFileOf(MockVolume v) {
    Path file = backingFile(v.id);
    if (Files.isRegularFile(file)) {
      return file;
    }
    try {
      Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
      try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
        f.setLength(v.capacity > 0 ? v.capacity : DEFAULT_BLOCK_BYTES); // sparse: no block is written
      }
    } catch (IOException e) {
      FileTrees.deleteQuietly(file); // not left short for the next call to take as made
      throw internal("cannot create the backing file of block volume " + v.id, e);
    }
    return file;
  }

  private static long size(Path file) {
    try {
      return Files.size(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static StatusRuntimeException internal(String what, IOException e) {
    return Status.INTERNAL.withDescription(what + ": " + e.getMessage()).asRuntimeException();
  }

  static String sha256(String volumeId) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
          .digest(volumeId.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java has SHA-256", e);
    }
  }
}
