package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.FileTrees;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * The bytes of disks and snapshots: a disk's data is the directory {@code ROOT/<sha256 of its id>} and, for a block
 * volume, the file {@code ROOT/<sha256>.img} ({@link RealMounts}' layout, which mounts them); a snapshot's is the same
 * under {@code ROOT/snapshots/}. Cutting a snapshot copies the disk's data; restoring one, or cloning a disk, copies
 * into the new disk. With a shared cloud the root is the directory beside the cloud file
 * ({@code FILE.data}); without, the {@code --real-mounts} directory. What was never written is absent, and copied
 * as absent. Not thread-safe by itself: its users hold the cloud's or the driver's lock.
 */
final class DiskData {
  private final Path root;

  DiskData(Path root) {
    this.root = root.toAbsolutePath().normalize();
  }

  /** The data beside a cloud file: {@code FILE.data}. */
  static DiskData besideCloud(Path cloudFile) {
    Path f = cloudFile.toAbsolutePath().normalize();
    return new DiskData(f.resolveSibling(f.getFileName() + ".data"));
  }

  Path root() {
    return root;
  }

  /** A disk's data directory (mount volumes). */
  Path diskDir(String diskId) {
    return root.resolve(RealMounts.sha256(diskId));
  }

  /** A disk's backing file (block volumes). */
  Path diskFile(String diskId) {
    return root.resolve(RealMounts.sha256(diskId) + ".img");
  }

  private Path snapshotDir(String snapshotId) {
    return root.resolve("snapshots").resolve(RealMounts.sha256(snapshotId));
  }

  private Path snapshotFile(String snapshotId) {
    return root.resolve("snapshots").resolve(RealMounts.sha256(snapshotId) + ".img");
  }

  /** Cuts a snapshot: copies the disk's bytes. */
  void snapshot(String diskId, String snapshotId) {
    copy(diskDir(diskId), diskFile(diskId), snapshotDir(snapshotId), snapshotFile(snapshotId));
  }

  /** A disk restored from a snapshot gets its bytes. */
  void restore(String snapshotId, String diskId) {
    copy(snapshotDir(snapshotId), snapshotFile(snapshotId), diskDir(diskId), diskFile(diskId));
  }

  /** A clone gets its source disk's bytes. */
  void cloneDisk(String sourceId, String diskId) {
    copy(diskDir(sourceId), diskFile(sourceId), diskDir(diskId), diskFile(diskId));
  }

  void deleteDisk(String diskId) {
    FileTrees.deleteQuietly(diskDir(diskId));
    FileTrees.deleteQuietly(diskFile(diskId));
  }

  void deleteSnapshot(String snapshotId) {
    FileTrees.deleteQuietly(snapshotDir(snapshotId));
    FileTrees.deleteQuietly(snapshotFile(snapshotId));
  }

  private static void copy(Path fromDir, Path fromFile, Path toDir, Path toFile) {
    try {
      if (Files.isDirectory(fromDir, LinkOption.NOFOLLOW_LINKS)) {
        copyTree(fromDir, toDir);
      }
      if (Files.isRegularFile(fromFile, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectories(toFile.getParent());
        Files.copy(fromFile, toFile, StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw Status.INTERNAL.withDescription("cannot copy disk data " + fromDir + " to " + toDir + ": " + e)
          .asRuntimeException();
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    Files.walkFileTree(from, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
        Files.createDirectories(to.resolve(from.relativize(dir).toString()));
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        Files.copy(file, to.resolve(from.relativize(file).toString()), StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.COPY_ATTRIBUTES, LinkOption.NOFOLLOW_LINKS);
        return FileVisitResult.CONTINUE;
      }
    });
  }
}
