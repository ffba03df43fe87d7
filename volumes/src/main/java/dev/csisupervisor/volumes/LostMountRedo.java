package dev.csisupervisor.volumes;

import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Step 2 of a settle ({@link VolumeSettler#settle}): what the mount table lost, staged and published again, with
 * the secrets and flags it was mounted with (a claim's, or those the record names). In a cluster, only what is
 * still claimed there. Changes the settle's {@link SettleProgress}; runs on the volume's lane.
 */
final class LostMountRedo {
  private static final Logger log = LoggerFactory.getLogger(LostMountRedo.class);

  private final VolumeContext ctx;

  LostMountRedo(VolumeContext ctx) {
    this.ctx = ctx;
  }

  /**
   * Mounts again what {@code p}'s record says was lost.
   *
   * @param claim the claim of an allocation being mounted now: its secrets and mount flags let a lost
   *     publication of it be done again even when the record alone cannot
   */
  CompletableFuture<Void> redo(NodePlugin node, SettleProgress p, Optional<VolumeClaim> claim) {
    // In a cluster, a lost mount whose claim is gone (fenced, forced) is not done again: the disk may be another
    // node's now. It stays LOST, saying so, and the cluster's sweep unmounts it as FENCED.
    // The allocation being mounted now took its claim a moment ago: only the others are asked about.
    List<String> lost = p.record.usages().values().stream().flatMap(u -> u.allocsIn(AllocPhase.LOST).stream())
        .filter(a -> claim.map(c -> !c.allocId().equals(a)).orElse(true)).distinct().sorted().toList();
    if (lost.isEmpty()) {
      return redoClaimed(node, p, claim, Set.of());
    }
    List<CompletableFuture<Boolean>> asks = lost.stream()
        .map(a -> ctx.clusterClaims().stillClaimed(p.record.pluginId(), p.record.volumeId(), a)
            .exceptionally(e -> true))
        .toList();
    return CompletableFuture.allOf(asks.toArray(CompletableFuture[]::new)).thenCompose(x -> {
      Set<String> fenced = new TreeSet<>();
      for (int i = 0; i < lost.size(); i++) {
        if (!asks.get(i).join()) {
          fenced.add(lost.get(i));
        }
      }
      if (!fenced.isEmpty()) {
        p.left.add("lost mount of " + p.record.volumeId() + " for alloc(s) " + fenced + " is not done again: its "
            + "cluster claim is gone (FENCED); it is unmounted");
      }
      return redoClaimed(node, p, claim, fenced);
    });
  }

  private CompletableFuture<Void> redoClaimed(NodePlugin node, SettleProgress p, Optional<VolumeClaim> claim,
      Set<String> fenced) {
    // Grouped by staging: a staging is redone once, before every lost publication from it.
    Map<String, List<UsageRecord>> groups = new LinkedHashMap<>();
    for (UsageRecord u : p.record.usages().values()) {
      boolean stagingLost = p.record.stageOf(u) == StageState.LOST;
      boolean someClaimed = u.allocs().keySet().stream().anyMatch(a -> !fenced.contains(a));
      if (someClaimed && (!u.allocsIn(AllocPhase.LOST).isEmpty() || (stagingLost && !u.allocs().isEmpty()))) {
        groups.computeIfAbsent(u.staged() ? u.staging() : "usage " + u.usage(), k -> new ArrayList<>()).add(u);
      }
    }
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (List<UsageRecord> group : groups.values()) {
      List<UsageRecord> waiting = group.stream().filter(u -> u.needsClaim() && !claimCovers(claim, u)).toList();
      if (!waiting.isEmpty()) {
        p.left.add("lost mount of " + p.record.volumeId() + " for alloc(s) "
            + waiting.stream().flatMap(u -> u.allocs().keySet().stream()).sorted().toList()
            + " waits for the allocation's mount: its mount flags or secrets are not stored");
        continue;
      }
      chain = chain.thenCompose(x -> redoGroup(node, p, group, claim, fenced));
    }
    return chain;
  }

  private static boolean claimCovers(Optional<VolumeClaim> claim, UsageRecord u) {
    return claim.isPresent() && claim.get().usage().equals(u.usage()) && u.allocs().containsKey(claim.get().allocId());
  }

  /** How one group is mounted again: the record it starts from, the secrets and context of its calls. */
  private record Redo(NodePlugin node, SettleProgress p, VolumeRecord r, List<UsageRecord> group,
      Optional<VolumeClaim> claim, Set<String> fenced, Secrets secrets, Map<String, String> volumeContext) {
    String what() {
      return "mount again of " + r.volumeId();
    }

    /** The group's lost allocations still claimed, each with its usage. */
    List<Map.Entry<UsageRecord, String>> lostAllocs() {
      List<Map.Entry<UsageRecord, String>> out = new ArrayList<>();
      for (UsageRecord u : group) {
        u.allocsIn(AllocPhase.LOST).stream().filter(a -> !fenced.contains(a)).forEach(a -> out.add(Map.entry(u, a)));
      }
      return out;
    }
  }

  /**
   * Mounts again the lost publications of {@code group} (the usages of one staging, or one unstaged usage): each
   * lost target unpublished first (a driver whose own state survived must forget it), then the staging, if it
   * is lost, unstaged (when nothing of it is mounted) and staged afresh, then each lost target published.
   */
  private CompletableFuture<Void> redoGroup(NodePlugin node, SettleProgress p, List<UsageRecord> group,
      Optional<VolumeClaim> claim, Set<String> fenced) {
    VolumeRecord r = p.record;
    Secrets secrets;
    try {
      secrets = claim.map(VolumeClaim::secrets).orElse(ctx.secrets().forNode(r));
    } catch (VolumeException e) {
      p.failed("mount again of " + r.volumeId(), e);
      return CompletableFuture.completedFuture(null);
    }
    Redo redo = new Redo(node, p, r, group, claim, fenced, secrets,
        claim.map(VolumeClaim::volumeContext).orElse(r.volumeContext()));
    CompletableFuture<Void> chain = unpublishLost(redo);
    if (r.stageOf(group.get(0)) == StageState.LOST) {
      chain = chain.thenCompose(x -> restage(redo));
    }
    for (Map.Entry<UsageRecord, String> lost : redo.lostAllocs()) {
      chain = chain.thenCompose(x -> republish(redo, lost.getKey(), lost.getValue()));
    }
    return chain.handle((x, failure) -> {
      if (failure != null) {
        p.failed(redo.what(), failure);
      }
      return null;
    });
  }

  /** NodeUnpublishVolume of each lost target (not found is done). */
  private CompletableFuture<Void> unpublishLost(Redo redo) {
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    for (Map.Entry<UsageRecord, String> lost : redo.lostAllocs()) {
      String alloc = lost.getValue();
      Path target = redo.node().pluginPath(redo.r().targetPath(alloc, lost.getKey().usage()));
      chain = chain.thenCompose(x -> ctx.calls().call("NodeUnpublishVolume", redo.what() + " for alloc " + alloc,
          true, () -> redo.node().client().nodeUnpublishVolumeAsync(redo.r().volumeId(), target)))
          .thenApply(x -> null);
    }
    return chain;
  }

  /** The group's lost staging: unstaged if nothing of it is mounted, then staged afresh; STAGED in the progress. */
  private CompletableFuture<Void> restage(Redo redo) {
    VolumeRecord r = redo.r();
    NodePlugin node = redo.node();
    UsageRecord first = redo.group().get(0);
    String name = first.staging();
    Path staging = r.stagingPath(name);
    VolumeCapability capability = redo.group().stream().filter(u -> claimCovers(redo.claim(), u)).findFirst()
        .map(u -> redo.claim().get().capability()).orElse(first.capability());
    CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
    if (r.usersOf(name).stream().noneMatch(UsageRecord::hasPublished)) {
      // Nothing of it is mounted: the plugin may still believe it staged (its own state survived), so it
      // is unstaged first and staged afresh; with a live publication the spec forbids the unstage.
      chain = chain.thenCompose(x -> ctx.calls().call("NodeUnstageVolume", redo.what(), true,
          () -> node.client().nodeUnstageVolumeAsync(r.volumeId(), node.pluginPath(staging)))).thenApply(x -> null);
    }
    return chain.thenCompose(x -> {
      HostMounts.makeDirectories(staging, "staging path");
      return ctx.calls().call("NodeStageVolume", redo.what(), false, () -> node.client().nodeStageVolumeAsync(
          new NodeStageRequest(r.volumeId(), r.publishContext(), node.pluginPath(staging), capability,
              redo.secrets(), redo.volumeContext())));
    }).thenRun(() -> {
      boolean mounted = ctx.mounts().isMountedNow(staging);
      SettleProgress p = redo.p();
      p.record = p.record.withStaging(name, p.record.stagings().get(name).withState(StageState.STAGED)
          .withMounted(mounted));
    });
  }

  /** NodePublishVolume of one lost target, with the claim's capability if it is the claim's own; PUBLISHED. */
  private CompletableFuture<Void> republish(Redo redo, UsageRecord u, String alloc) {
    VolumeRecord r = redo.r();
    NodePlugin node = redo.node();
    Path target = r.targetPath(alloc, u.usage());
    Optional<VolumeClaim> claim = redo.claim();
    boolean own = claim.filter(c -> c.allocId().equals(alloc) && c.usage().equals(u.usage())).isPresent();
    VolumeCapability capability = own ? claim.get().capability() : u.capability();
    return CompletableFuture.completedFuture(null).thenCompose(x -> {
      HostMounts.makeDirectories(target.getParent(), "target's parent directory");
      return ctx.calls().call("NodePublishVolume", redo.what() + " for alloc " + alloc, false,
          () -> node.client().nodePublishVolumeAsync(new NodePublishRequest(r.volumeId(), r.publishContext(),
              r.stagingPathOf(u).map(node::pluginPath), node.pluginPath(target), capability,
              u.usage().readOnly(), redo.secrets(), redo.volumeContext())));
    }).thenRun(() -> {
      SettleProgress p = redo.p();
      UsageRecord now = p.record.usages().get(u.usage());
      p.record = p.record.withUsage(now.withAlloc(alloc, AllocPhase.PUBLISHED));
      p.events.add(() -> {
        log.info("mounted {} again for alloc {} at {} (the mount table had lost it)", p.record.key(), alloc, target);
        ctx.events().emit(VolumeEvent.Kind.REMOUNTED, p.record.key(), alloc, target.toString());
      });
    });
  }
}
