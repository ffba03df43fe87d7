package dev.csisupervisor.volumes;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When an allocation's cluster claim may go (DESIGN.md "Cluster volumes", the spec's order): once the allocation
 * has no usage of the volume here and, if it was the volume's last use on this node, once the volume is unstaged
 * here too, since the controller agent unpublishes the volume from this node as soon as the node's last claim goes,
 * and CSI's ControllerUnpublishVolume "MUST be called after all NodeUnstageVolume and NodeUnpublishVolume on the
 * volume are called and succeed". Releases are decided by the commits that take an allocation off the volume's record
 * or record its unstage ({@link #recordChanged}), before whoever waits for that commit (an unmount's caller) learns
 * of it. A release is never made while a mount of the same allocation is under way: that mount took (or is taking)
 * the claim again, and releases it at its end if it failed ({@link #mountEnded}). Thread-safe: its decisions are made
 * under its lock (they are quick: {@link ClusterClaims#released} never blocks).
 */
final class ClusterReleases {
  private static final Logger log = LoggerFactory.getLogger(ClusterReleases.class);

  private record Held(VolumeKey key, String allocId) {}

  private final ClusterClaims claims;
  private final Map<VolumeKey, VolumeRecord> records;
  /** Per volume, the allocations whose claim waits for the volume's unstage here. Guarded by this. */
  private final Map<VolumeKey, Set<String>> afterUnstage = new java.util.HashMap<>();
  /** Mounts under way, per (volume, allocation): how many. */
  private final Map<Held, Integer> mounting = new ConcurrentHashMap<>();

  ClusterReleases(ClusterClaims claims, Map<VolumeKey, VolumeRecord> records) {
    this.claims = claims;
    this.records = records;
  }

  /** A mount of {@code allocId} starts: no release of its claim until it ends. */
  void mountStarted(VolumeKey key, String allocId) {
    mounting.merge(new Held(key, allocId), 1, Integer::sum);
  }

  /** The mount ended; if it failed (or undid itself), the claim goes as {@link #allocGone} says. */
  void mountEnded(VolumeKey key, String allocId, boolean failed) {
    mounting.computeIfPresent(new Held(key, allocId), (k, n) -> n == 1 ? null : n - 1);
    if (failed) {
      allocGone(key, allocId);
    }
  }

  /**
   * The allocation's use of the volume here ended (unmounted, rolled back, its mount failed): its claim goes now,
   * or once the volume is unstaged here if it was the last use; nothing while the allocation holds it again.
   */
  synchronized void allocGone(VolumeKey key, String allocId) {
    if (mounting.containsKey(new Held(key, allocId))) {
      return; // mounted again meanwhile: that mount's claim stands, and its end decides
    }
    VolumeRecord r = records.get(key);
    if (r != null && r.usageOf(allocId).isPresent()) {
      return;
    }
    if (r != null && stillStaged(r)) {
      if (afterUnstage.computeIfAbsent(key, k -> new java.util.HashSet<>()).add(allocId)) {
        log.info("volume {}: the cluster claim of alloc {} is kept until the volume is unstaged on this node"
            + " (the controller unpublish must come after it)", key, allocId);
      }
      return;
    }
    claims.released(key.pluginId(), key.volumeId(), allocId);
  }

  /** No allocation uses the volume here, and it is still staged (or being unstaged) or controller-published. */
  private static boolean stillStaged(VolumeRecord r) {
    return r.allocs().isEmpty() && r.onNode();
  }

  /**
   * A commit changed the volume's record from {@code before} (null: none) to what {@code records} holds now: the
   * allocations it took off lose their claim ({@link #allocGone}), and releases that waited for the volume's unstage
   * here are made if it is done.
   */
  synchronized void recordChanged(VolumeKey key, VolumeRecord before) {
    if (claims == ClusterClaims.NONE) {
      return;
    }
    VolumeRecord r = records.get(key);
    if (before != null) {
      before.allocs().stream().filter(alloc -> r == null || r.usageOf(alloc).isEmpty())
          .forEach(alloc -> allocGone(key, alloc));
    }
    if (afterUnstage.containsKey(key) && (r == null || !stillStaged(r))) {
      afterUnstage.remove(key).forEach(alloc -> allocGone(key, alloc));
    }
  }

  /** Allocations whose claim waits for the volume's unstage here (for what a volume waits for). */
  synchronized Set<String> waitingForUnstage(VolumeKey key) {
    return Set.copyOf(afterUnstage.getOrDefault(key, Set.of()));
  }
}
