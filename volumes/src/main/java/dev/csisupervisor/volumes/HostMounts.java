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
  private final Optional<MountTable> table;
  private ExecutorService unmounter; // guarded by this; made on first use

  HostMounts(Optional<MountTable> table) {
    this.table = table;
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
      return Optional.of(table.get().read());
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
          for (int layer = 0; table.get().read().isMountPoint(path); layer++) {
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
