package dev.csisupervisor.volumes;

import dev.csisupervisor.volumes.VolumeException.Reason;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * The volume manager's view of the machine's mounts: reads of the {@link MountTable} as
 * {@link VolumeException}s the manager's steps can fail with, and the agent's own unmounts (forced, orphans)
 * on a thread of their own ({@code umount} may hang on a dead remote file system; no lane or I/O thread
 * waits for it). Without a table (a plugin that mounts nothing, such as the mock plugin without root)
 * nothing is verified: every recorded path is believed, and the agent unmounts nothing itself. Thread-safe.
 */
final class HostMounts implements AutoCloseable {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(HostMounts.class);

  private final Optional<MountTable> table;
  /** The CSI root as configured (what records name) and as the kernel writes it (symlinks resolved), once. */
  private final Path root;
  private final Path kernelRoot;
  private ExecutorService unmounter; // guarded by this; made on first use

  /**
   * @param csiRoot the CSI root as configured; resolved once here (a root below a symlinked directory, such as a
   *     {@code /var/lib} that is a link, must not make every live mount look lost)
   */
  HostMounts(Optional<MountTable> table, Path csiRoot) {
    this.table = table;
    this.root = csiRoot.toAbsolutePath().normalize();
    this.kernelRoot = resolved(root);
    if (!kernelRoot.equals(root)) {
      log.info("the CSI root {} is {} as the kernel writes it: the mount table is read with that", root, kernelRoot);
    }
  }

  /** {@code path} with the symlinks of its deepest existing ancestor resolved (the rest appended as it is). */
  static Path resolved(Path path) {
    Path existing = path;
    while (existing != null && !java.nio.file.Files.exists(existing)) {
      existing = existing.getParent();
    }
    if (existing == null) {
      return path;
    }
    try {
      return existing.toRealPath().resolve(existing.relativize(path)).normalize();
    } catch (IOException e) {
      return path;
    }
  }

  /** Whether mounts are checked against a table at all. */
  boolean verifies() {
    return table.isPresent();
  }

  /** A reading of the table; empty if mounts are not verified. */
  Optional<MountPoints> read() throws VolumeException {
    if (table.isEmpty()) {
      return Optional.empty();
    }
    try {
      return Optional.of(table.get().read().seenFrom(kernelRoot, root));
    } catch (IOException e) {
      throw new VolumeException(Reason.LOCAL_IO, "cannot read the mount table: " + e.getMessage(), e);
    }
  }

  /** Whether {@code path} is a mount point now; {@code false} if mounts are not verified. */
  boolean isMounted(Path path) throws VolumeException {
    Optional<MountPoints> now = read();
    return now.isPresent() && now.get().isMountPoint(path);
  }

  /** {@link #isMounted} for a future's stage: a failure is thrown as a {@link CompletionException}. */
  boolean isMountedNow(Path path) {
    try {
      return isMounted(path);
    } catch (VolumeException e) {
      throw new CompletionException(e);
    }
  }

  /**
   * Makes {@code dir} and its parents (a staging path, a target's parent: the CO makes them, the plugin the target);
   * a failure is thrown as a {@link CompletionException} of a {@link VolumeException} naming {@code what}.
   */
  static void makeDirectories(Path dir, String what) {
    try {
      java.nio.file.Files.createDirectories(dir);
    } catch (IOException e) {
      throw new CompletionException(
          new VolumeException(Reason.LOCAL_IO, "cannot make the " + what + " " + dir + ": " + e, e));
    }
  }

  /**
   * Unmounts {@code path} if it is a mount point (every layer mounted over it), by the agent itself; completes
   * once it is not one, or fails naming the path and the system's answer.
   */
  CompletableFuture<Void> unmount(Path path) {
    if (table.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    try {
      return CompletableFuture.runAsync(() -> {
        try {
          for (int layer = 0; table.get().read().seenFrom(kernelRoot, root).isMountPoint(path); layer++) {
            if (layer == 8) {
              throw new IOException("still a mount point after 8 unmounts");
            }
            table.get().unmount(path);
          }
        } catch (IOException e) {
          throw new CompletionException(new VolumeException(Reason.LOCAL_IO,
              "the agent could not unmount " + path + ": " + e.getMessage(), e));
        }
      }, executor());
    } catch (RejectedExecutionException e) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.CLOSED, "volume manager is closed"));
    }
  }

  private synchronized ExecutorService executor() {
    if (unmounter == null) {
      unmounter = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "csi-volumes-unmount");
        t.setDaemon(true);
        return t;
      });
    }
    return unmounter;
  }

  @Override
  public synchronized void close() {
    if (unmounter != null) {
      unmounter.shutdownNow();
    }
  }
}
