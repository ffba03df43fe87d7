package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.volumes.Plugins.ControllerPlugin;
import dev.csisupervisor.volumes.Plugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives whatever a volume's record says is not final to its end: the same steps undo a failed mount, finish
 * an unmount and recover after a crash (see {@link #settle}). What the calls did is committed, whether they all
 * succeeded or not; pending work left is tried again by {@link SettleRetries}. Runs on the volume's lane.
 */
final class VolumeSettler {
  private static final Logger log = LoggerFactory.getLogger(VolumeSettler.class);

  /** The manager's commit: {@code next} made durable as {@code key}'s record, then the record in memory. */
  @FunctionalInterface
  interface Commit {
    CompletableFuture<VolumeRecord> commit(VolumeKey key, VolumeRecord previous, VolumeRecord next);
  }

  private final VolumeContext ctx;
  private final Commit commit;
  private final SettleRetries retries;

  VolumeSettler(VolumeContext ctx, Commit commit, SettleRetries retries) {
    this.ctx = ctx;
    this.commit = commit;
    this.retries = retries;
  }

  /** Progress of one settle: the record as the calls so far have made it, and what to report. */
  private static final class Progress {
    VolumeRecord record;
    final List<Runnable> events = new ArrayList<>();

    Progress(VolumeRecord record) {
      this.record = record;
    }
  }

  /**
   * Drives every non-final part of {@code start} to its end. Step 1: NodeUnpublishVolume for every
   * allocation not PUBLISHED. Step 2: NodeUnstageVolume for every staging no allocation uses.
   * Step 3: ControllerUnpublishVolume if no usage is left. Stops at the first failure; commits what
   * was done either way; on a failure schedules another try. Runs on the volume's lane.
   */
  CompletableFuture<VolumeRecord> settle(NodePlugin node, VolumeRecord start) {
    VolumeKey key = start.key();
    Progress p = new Progress(start);
    String what = "cleanup of " + start.volumeId();
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (UsageRecord u : start.usages().values()) {
      for (Map.Entry<String, AllocPhase> a : u.allocs().entrySet()) {
        if (a.getValue() == AllocPhase.PUBLISHED) {
          continue;
        }
        String alloc = a.getKey();
        Path target = start.targetPath(alloc, u.usage());
        boolean rollback = a.getValue() == AllocPhase.PUBLISHING;
        chain = chain.thenCompose(x -> ctx.calls().call("NodeUnpublishVolume", (rollback ? "rollback of the mount of "
                : "unmount of ") + start.volumeId() + " for alloc " + alloc, true,
            () -> node.client().nodeUnpublishVolumeAsync(start.volumeId(), target)))
            .thenRun(() -> {
              UsageRecord now = p.record.usages().get(u.usage());
              p.record = p.record.withUsage(now.withoutAlloc(alloc));
              removeEmptyDirectories(target.getParent(), start.pluginDir().resolve("per-alloc"));
              p.events.add(() -> {
                log.info("{} {} for alloc {}", rollback ? "rolled back the mount of" : "unmounted", key, alloc);
                ctx.events().emit(rollback ? VolumeEvent.Kind.ROLLED_BACK : VolumeEvent.Kind.UNMOUNTED, key, alloc, target.toString());
              });
            });
      }
    }
    chain = chain.thenCompose(x -> unstageUnused(node, p, what));
    chain = chain.thenCompose(x -> controllerUnpublishIfUnused(p, what));
    return chain.handle((x, failure) -> failure == null ? null : Futures.unwrap(failure))
        .thenCompose(failure -> {
          VolumeRecord end = p.record;
          CompletableFuture<VolumeRecord> saved = end.equals(start)
              ? CompletableFuture.completedFuture(start) : commit.commit(key, start, end);
          return saved.handle((r, commitFailure) -> {
            if (commitFailure == null) {
              p.events.forEach(Runnable::run);
            }
            VolumeRecord now = ctx.records().get(key);
            if (failure != null || commitFailure != null) {
              Throwable why = failure != null ? failure : Futures.unwrap(commitFailure);
              log.warn("volume {}: pending work left ({}); retrying", key, why.getMessage());
              ctx.events().emit(VolumeEvent.Kind.PENDING, key, "", String.valueOf(why.getMessage()));
              retries.schedule(key);
            } else {
              retries.clear(key);
            }
            return now;
          });
        });
  }

  private CompletableFuture<Void> unstageUnused(NodePlugin node, Progress p, String what) {
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (UsageRecord u : p.record.usages().values()) {
      if (!u.allocs().isEmpty()) {
        continue;
      }
      if (u.stage() == StageState.NOT_STAGED) {
        chain = chain.thenRun(() -> p.record = p.record.withoutUsage(u.usage()));
        continue;
      }
      Path staging = p.record.stagingPath(u.usage());
      chain = chain.thenCompose(x -> ctx.calls().call("NodeUnstageVolume", what, true,
          () -> node.client().nodeUnstageVolumeAsync(p.record.volumeId(), staging)))
          .thenRun(() -> {
            p.record = p.record.withoutUsage(u.usage());
            removeEmptyDirectories(staging, p.record.pluginDir().resolve("staging"));
          });
    }
    return chain;
  }

  private CompletableFuture<Void> controllerUnpublishIfUnused(Progress p, String what) {
    VolumeRecord r = p.record;
    if (!r.usages().isEmpty() || r.controller() == ControllerState.NONE) {
      return CompletableFuture.completedFuture(null);
    }
    Optional<ControllerPlugin> controller = ctx.plugins().readyController(r.pluginId());
    if (controller.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "controller plugin " + r.pluginId() + " must unpublish " + r.volumeId() + " from " + r.controllerNodeId()
              + " but is not ready"));
    }
    // No secrets here: the unmount must work with what the node has (CSI makes them optional).
    return ctx.calls().call("ControllerUnpublishVolume", what, true, () -> controller.get().client()
            .controllerUnpublishVolumeAsync(r.volumeId(), r.controllerNodeId(), Secrets.none()))
        .thenRun(() -> p.record = p.record.withController(ControllerState.NONE, "", Map.of()));
  }

  /** Removes {@code dir} and its parents up to (not including) {@code stop} while they are empty; quietly. */
  private static void removeEmptyDirectories(Path dir, Path stop) {
    for (Path d = dir; d != null && d.startsWith(stop) && !d.equals(stop); d = d.getParent()) {
      try {
        Files.deleteIfExists(d);
      } catch (DirectoryNotEmptyException | NoSuchFileException e) {
        return;
      } catch (IOException e) {
        // Still a mount point (EBUSY) or not ours to remove: leave it, it is harmless.
        log.debug("left {}: {}", d, e.toString());
        return;
      }
    }
  }
}
