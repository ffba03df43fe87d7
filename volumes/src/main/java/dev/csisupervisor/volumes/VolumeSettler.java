package dev.csisupervisor.volumes;

import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.volumes.ReadyPlugins.ControllerPlugin;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
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
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives whatever a volume's record says is not final to its end: the same steps undo a failed mount, finish
 * an unmount, mount again what the mount table lost, and recover after a crash (see {@link #settle}). Each
 * allocation is on its own: one that cannot be unpublished does not hold the others. What the calls did is
 * committed, whether they all succeeded or not; what is left says what it waits for ({@link #waitingFor}) and
 * is tried again by {@link SettleRetries}, or when its plugin is ready. Runs on the volume's lane.
 */
final class VolumeSettler {
  private static final Logger log = LoggerFactory.getLogger(VolumeSettler.class);

  private final VolumeContext ctx;
  private final RecordCommit commit;
  private final SettleRetries retries;
  private final LostMountRedo lostMounts;
  /** Per volume with work left: what it waits for, in words. */
  private final Map<VolumeKey, String> waiting = new ConcurrentHashMap<>();

  VolumeSettler(VolumeContext ctx, RecordCommit commit, SettleRetries retries) {
    this.ctx = ctx;
    this.commit = commit;
    this.retries = retries;
    this.lostMounts = new LostMountRedo(ctx);
  }

  /** Per volume, what its pending work waits for ({@code "<plugin>/<volume>"} to words). */
  Map<String, String> waitingFor() {
    Map<String, String> out = new java.util.TreeMap<>();
    waiting.forEach((k, why) -> out.put(k.toString(), why));
    return out;
  }

  /** The volume's record is gone or has no work: it waits for nothing. */
  void forget(VolumeKey key) {
    waiting.remove(key);
  }

  /**
   * Drives every non-final part of {@code start} to its end, each allocation on its own:
   * Step 1: NodeUnpublishVolume for every allocation being mounted or unmounted, and the target checked in the
   * mount table (still mounted: not done). Step 2: what the mount table lost, staged and published again.
   * Step 3: NodeUnstageVolume for every staging no allocation uses, checked the same way. Step 4:
   * ControllerUnpublishVolume once no usage is left. Without a ready node plugin only step 4 runs (and, for a
   * forced record, the agent's own unmounts of steps 1 and 3). Commits what was done; what is left is retried.
   *
   * @param node the ready node plugin, if it is
   * @param claim the claim of an allocation being mounted now: its secrets and mount flags let a lost
   *     publication of it be done again even when the record alone cannot
   */
  CompletableFuture<VolumeRecord> settle(Optional<NodePlugin> node, VolumeRecord start, Optional<VolumeClaim> claim) {
    VolumeKey key = start.key();
    SettleProgress p = new SettleProgress(start);
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    if (node.isEmpty() && !start.forced() && needsNode(start)) {
      p.left.add(nodeAbsence(key.pluginId()));
    }
    for (UsageRecord u : start.usages().values()) {
      for (Map.Entry<String, AllocPhase> a : u.allocs().entrySet()) {
        if (a.getValue() == AllocPhase.PUBLISHING || a.getValue() == AllocPhase.UNPUBLISHING) {
          String alloc = a.getKey();
          chain = chain.thenCompose(x -> unpublish(node, p, u.usage(), alloc, a.getValue() == AllocPhase.PUBLISHING));
        }
      }
    }
    if (node.isPresent() && !start.forced()) {
      chain = chain.thenCompose(x -> lostMounts.redo(node.get(), p, claim));
    }
    chain = chain.thenCompose(x -> unstageUnused(node, p));
    chain = chain.thenCompose(x -> controllerUnpublishIfUnused(p));
    return chain.handle((x, failure) -> {
          if (failure != null) {
            p.failed("cleanup of " + key, failure); // a bug in a step: still commit what was done
          }
          return null;
        })
        .thenCompose(x -> finish(start, p));
  }

  /** Commits what the steps did, then reports it; what is left says what it waits for, and is retried. */
  private CompletableFuture<VolumeRecord> finish(VolumeRecord start, SettleProgress p) {
    VolumeKey key = start.key();
    VolumeRecord end = p.record;
    CompletableFuture<VolumeRecord> saved = end.equals(start)
        ? CompletableFuture.completedFuture(start) : commit.commit(key, start, end);
    return saved.handle((r, commitFailure) -> {
      if (commitFailure == null) {
        p.events.forEach(Runnable::run);
      } else {
        p.failed("commit", commitFailure);
      }
      VolumeRecord now = ctx.records().get(key);
      if (now == null || !now.hasWork()) {
        waiting.remove(key);
        retries.clear(key);
      } else {
        pending(key, now, p);
      }
      return now;
    });
  }

  /** {@code key} still has work: what it waits for, said once per change, and a retry if time may help. */
  private void pending(VolumeKey key, VolumeRecord now, SettleProgress p) {
    String why = p.left.isEmpty() ? "work left: " + describe(now) : String.join("; ", p.left);
    String before = waiting.put(key, why);
    if (!why.equals(before)) {
      log.warn("volume {}: pending: {}", key, why);
      ctx.events().emit(VolumeEvent.Kind.PENDING, key, "", why);
    }
    if (p.retry) {
      retries.schedule(key);
    }
  }

  /** Whether the record's work needs the node plugin (anything but the controller step). */
  private static boolean needsNode(VolumeRecord r) {
    return !r.usages().isEmpty() || !r.stagings().isEmpty();
  }

  /** Why a node step waits: the node plugin is not ready, or not even registered. */
  String nodeAbsence(String pluginId) {
    return ctx.plugins().registeredNode(pluginId).isPresent()
        ? "waiting for node plugin " + pluginId + " to be ready"
        : "node plugin " + pluginId + " is not registered (removed from the config?); "
            + "csi-agent volume unmount --force unmounts without it";
  }

  // ---- step 1: unpublish ----

  private CompletableFuture<Void> unpublish(Optional<NodePlugin> node, SettleProgress p, VolumeUsage usage,
      String alloc, boolean rollback) {
    Path target = p.record.targetPath(alloc, usage);
    String what = (rollback ? "rollback of the mount of " : "unmount of ") + p.record.volumeId()
        + " for alloc " + alloc;
    CompletableFuture<Void> done;
    if (node.isPresent()) {
      done = ctx.calls().call("NodeUnpublishVolume", what, true,
              () -> node.get().client().nodeUnpublishVolumeAsync(p.record.volumeId(), node.get().pluginPath(target)))
          .thenRun(() -> requireUnmounted(target, "NodeUnpublishVolume"));
      if (p.record.forced()) {
        done = done.exceptionallyCompose(e -> agentUnmount(target, true));
      }
    } else if (p.record.forced()) {
      done = agentUnmount(target, true);
    } else {
      return CompletableFuture.completedFuture(null); // said in p.left already
    }
    boolean forced = p.record.forced();
    return done.handle((x, failure) -> {
      if (failure != null) {
        p.failed(what, failure);
        return null;
      }
      UsageRecord now = p.record.usages().get(usage);
      p.record = p.record.withUsage(now.withoutAlloc(alloc));
      removeEmptyDirectories(target.getParent(), p.record.pluginDir().resolve("per-alloc"));
      p.events.add(() -> {
        log.info("{} {} for alloc {}{}", rollback ? "rolled back the mount of" : "unmounted", p.record.key(), alloc,
            forced ? " (forced)" : "");
        ctx.events().emit(rollback ? VolumeEvent.Kind.ROLLED_BACK : VolumeEvent.Kind.UNMOUNTED, p.record.key(), alloc,
            target.toString());
      });
      return null;
    });
  }

  /** A staging whose plugin no longer offers an unstage: done if it is not mounted, else it says what to do. */
  private CompletableFuture<Void> notMountedAfterCapabilityDropped(Path staging, String pluginId) {
    try {
      if (!ctx.mounts().isMounted(staging)) {
        return CompletableFuture.completedFuture(null);
      }
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    return CompletableFuture.failedFuture(new VolumeException(Reason.STILL_MOUNTED, staging + " is still a mount point"
        + " and node plugin " + pluginId + " no longer offers STAGE_UNSTAGE_VOLUME to unstage it; "
        + "csi-agent volume unmount --force unmounts it"));
  }

  /** The plugin said the path is unmounted: the mount table must agree, or the step is not done. */
  private void requireUnmounted(Path path, String rpc) {
    if (ctx.mounts().isMountedNow(path)) {
      throw new java.util.concurrent.CompletionException(new VolumeException(Reason.STILL_MOUNTED,
          path + " is still a mount point after " + rpc + " answered done"));
    }
  }

  /**
   * The agent unmounts {@code path} itself (forced), then, if {@code remove}, removes it if it is an empty
   * directory (a target the plugin made; a file or a directory with data in it is left, and reported by gc).
   */
  private CompletableFuture<Void> agentUnmount(Path path, boolean remove) {
    if (!ctx.mounts().verifies()) {
      log.warn("forced: {} is not unmounted by the agent: mounts are not checked here (no mount table), so it "
          + "cannot tell whether it is a mount; check it by hand", path);
    }
    return ctx.mounts().unmount(path).thenRun(() -> {
      if (remove && Files.isDirectory(path, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
        try {
          Files.deleteIfExists(path);
        } catch (IOException e) {
          log.debug("left {}: {}", path, e.toString());
        }
      }
    });
  }

  // ---- step 3: unstage what nothing uses ----

  private CompletableFuture<Void> unstageUnused(Optional<NodePlugin> node, SettleProgress p) {
    // A usage no allocation holds any more holds nothing: its staging, if any, is the volume's.
    for (UsageRecord u : p.record.usages().values()) {
      if (u.allocs().isEmpty()) {
        p.record = p.record.withoutUsage(u.usage());
      }
    }
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (String name : p.record.stagings().keySet()) {
      if (p.record.usersOf(name).isEmpty()) {
        chain = chain.thenCompose(x -> unstage(node, p, name));
      }
    }
    return chain;
  }

  /** NodeUnstageVolume of the staging {@code name} (or, for a forced record, the agent's own unmount). */
  private CompletableFuture<Void> unstage(Optional<NodePlugin> node, SettleProgress p, String name) {
    Path staging = p.record.stagingPath(name);
    String what = "unstage of " + p.record.volumeId();
    CompletableFuture<Void> done;
    if (node.isPresent() && !node.get().stages()) {
      // The plugin was registered again without STAGE_UNSTAGE_VOLUME: there is no unstage to ask for.
      done = notMountedAfterCapabilityDropped(staging, p.record.pluginId());
    } else if (node.isPresent()) {
      done = ctx.calls().call("NodeUnstageVolume", what, true,
              () -> node.get().client().nodeUnstageVolumeAsync(p.record.volumeId(), node.get().pluginPath(staging)))
          .thenRun(() -> requireUnmounted(staging, "NodeUnstageVolume"));
    } else if (p.record.forced()) {
      done = agentUnmount(staging, false);
    } else {
      return CompletableFuture.completedFuture(null); // said in p.left already
    }
    if (node.isPresent() && p.record.forced()) {
      done = done.exceptionallyCompose(e -> agentUnmount(staging, false));
    }
    return done.handle((y, failure) -> {
      if (failure != null) {
        p.failed(what, failure);
      } else {
        p.record = p.record.withStaging(name, null);
        removeEmptyDirectories(staging, p.record.pluginDir().resolve("staging"));
      }
      return null;
    });
  }

  // ---- step 4: the controller side ----

  private CompletableFuture<Void> controllerUnpublishIfUnused(SettleProgress p) {
    VolumeRecord r = p.record;
    if (!r.usages().isEmpty() || !r.stagings().isEmpty() || r.controller() == ControllerState.NONE) {
      return CompletableFuture.completedFuture(null);
    }
    String what = "controller unpublish of " + r.volumeId() + " from " + r.controllerNodeId();
    Optional<ControllerPlugin> controller = ctx.plugins().readyController(r.pluginId());
    if (controller.isEmpty()) {
      p.left.add(what + ": waiting for controller plugin " + r.pluginId() + " to be ready");
      return CompletableFuture.completedFuture(null); // its readiness brings the volume back here
    }
    Secrets secrets;
    try {
      secrets = ctx.secrets().forController(r);
    } catch (VolumeException e) {
      p.failed(what, e);
      return CompletableFuture.completedFuture(null);
    }
    return ctx.calls().call("ControllerUnpublishVolume", what, true, () -> controller.get().client()
            .controllerUnpublishVolumeAsync(r.volumeId(), r.controllerNodeId(), secrets))
        .handle((x, failure) -> {
          if (failure != null) {
            p.failed(what, failure);
          } else {
            p.record = p.record.withController(ControllerState.NONE, "", Map.of());
          }
          return null;
        });
  }

  /** What a record still has to do, in words (for a pending volume whose last settle left nothing said). */
  static String describe(VolumeRecord r) {
    List<String> parts = new ArrayList<>();
    for (UsageRecord u : r.usages().values()) {
      u.allocs().forEach((alloc, phase) -> {
        if (phase != AllocPhase.PUBLISHED) {
          parts.add(phase.name().toLowerCase(java.util.Locale.ROOT) + " for alloc " + alloc);
        }
      });
    }
    r.stagings().forEach((name, s) -> {
      if (r.usersOf(name).isEmpty()) {
        parts.add("unstage of " + r.stagingPath(name));
      } else if (s.state() != StageState.STAGED) {
        parts.add("staging " + r.stagingPath(name) + " " + s.state().name().toLowerCase(java.util.Locale.ROOT));
      }
    });
    if (r.usages().isEmpty() && r.stagings().isEmpty() && r.controller() != ControllerState.NONE) {
      parts.add("controller unpublish from " + r.controllerNodeId());
    }
    return String.join(", ", parts);
  }

  /** Removes {@code path} and its parents up to (not including) {@code stop} while they are empty; quietly. */
  static void removeEmptyDirectories(Path path, Path stop) {
    for (Path d = path; d != null && d.startsWith(stop) && !d.equals(stop); d = d.getParent()) {
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
