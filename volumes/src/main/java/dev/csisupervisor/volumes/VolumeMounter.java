package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.common.Futures;
import dev.csisupervisor.volumes.ReadyPlugins.ControllerPlugin;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One claim's mount, on its volume's lane: what an earlier operation left is settled first, a recorded
 * publication is handed back (if the mount table still has it), else the mount is planned ({@link MountPlan}: the
 * node's rules, before any call), its intent committed, the controller publish, stage and publish called, and the
 * result committed; a failure is undone by {@link VolumeSettler}. Last, a node expansion the volume is owed.
 * Thread-safe: its state is the map of mounts in flight whose outcome is uncertain.
 */
final class VolumeMounter {
  private static final Logger log = LoggerFactory.getLogger(VolumeMounter.class);

  private final VolumeContext ctx;
  private final VolumeAdmission admission;
  private final VolumeSettler settler;
  private final RecordCommit commit;
  private final Path csiRoot;
  /** Mounts whose call's outcome is uncertain, sent again: what happened (for waitingFor). */
  private final Map<VolumeKey, String> inFlight = new ConcurrentHashMap<>();

  VolumeMounter(VolumeContext ctx, VolumeAdmission admission, VolumeSettler settler, RecordCommit commit,
      Path csiRoot) {
    this.ctx = ctx;
    this.admission = admission;
    this.settler = settler;
    this.commit = commit;
    this.csiRoot = csiRoot;
  }

  /** Per volume whose mount sends a call again: what happened. */
  Map<VolumeKey, String> inFlight() {
    return Map.copyOf(inFlight);
  }

  /**
   * Mounts {@code c} (on its volume's lane).
   *
   * @param clusterPublished the cluster's controller agent made the controller publish ({@code c} carries its
   *     publish context): no controller call here
   */
  CompletableFuture<MountedVolume> mount(VolumeClaim c, boolean clusterPublished) {
    Optional<NodePlugin> found = ctx.plugins().readyNode(c.pluginId());
    if (found.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "node plugin " + c.pluginId() + " stopped being ready before the mount of " + c.volumeId() + " could start"));
    }
    NodePlugin node = found.get();
    VolumeRecord rec = ctx.records().get(c.key());
    // Step 1: finish what an earlier operation left (a crash, a failed rollback) and mount again what the mount
    // table lost (this claim's own publication with its secrets), so the rules see the truth.
    CompletableFuture<VolumeRecord> settled = rec != null && rec.hasWork()
        ? settler.settle(Optional.of(node), rec, Optional.of(c)) : CompletableFuture.completedFuture(rec);
    return settled.thenCompose(r -> mountSettled(node, c, r, clusterPublished))
        .thenCompose(m -> expandOwed(node, c, m));
  }

  private CompletableFuture<MountedVolume> mountSettled(NodePlugin node, VolumeClaim c, VolumeRecord rec,
      boolean clusterPublished) {
    // A record that only owes a node expansion is no volume here yet: it starts afresh, keeping what is owed.
    VolumeRecord base = rec != null && rec.onNode() ? rec
        : VolumeRecord.empty(c.key(), ctx.plugins().pluginDir(node.info()))
            .withNodeExpansion(rec == null ? Optional.empty() : rec.nodeExpansion());
    UsageRecord existing = base.usages().get(c.usage());
    if (existing != null && existing.allocs().get(c.allocId()) == AllocPhase.PUBLISHED) {
      return handBack(node, c, rec, existing);
    }
    MountPlan plan;
    try {
      plan = plan(node, c, rec, base, existing, clusterPublished);
    } catch (VolumeException | IllegalArgumentException e) {
      return CompletableFuture.failedFuture(e); // refused before anything was committed: nothing to undo
    }
    return run(plan);
  }

  // ---- step 2: the plan, and the rules on this node, before any call ----

  private MountPlan plan(NodePlugin node, VolumeClaim c, VolumeRecord rec, VolumeRecord base, UsageRecord existing,
      boolean clusterPublished) throws VolumeException {
    // One staging per volume (CSI): the usage's own if it has one, else the volume's.
    String stagingName = existing != null && existing.staged() ? existing.staging()
        : node.stages() ? base.stagingNameFor(c.usage()) : "";
    Staging staging = currentStaging(c, base, stagingName);
    Optional<VolumeException> refused = admission.check(node, c, rec)
        .or(() -> admission.checkStaging(c, base, stagingName));
    if (refused.isPresent()) {
      throw refused.get();
    }
    Path target = base.targetPath(c.allocId(), c.usage());
    if (!target.normalize().startsWith(csiRoot)) {
      throw new IllegalArgumentException("target path " + target + " would lie outside the CSI root " + csiRoot);
    }
    boolean newVolume = rec == null || !rec.onNode();
    if (newVolume) {
      Optional<VolumeException> full = admission.reserveSlot(node, c);
      if (full.isPresent()) {
        throw full.get();
      }
    }
    Optional<ControllerPlugin> controller = publishingController(c, base, clusterPublished, newVolume);
    boolean stage = !stagingName.isEmpty() && (staging == null || staging.state() != StageState.STAGED);
    return new MountPlan(node, c, rec, base, existing, stagingName, staging, stage, controller, newVolume, target);
  }

  /** The volume's staging this mount uses, as recorded; one the mount table lost is LOST (staged again first). */
  private Staging currentStaging(VolumeClaim c, VolumeRecord base, String stagingName) throws VolumeException {
    Staging staging = stagingName.isEmpty() ? null : base.stagings().get(stagingName);
    if (staging != null && staging.state() == StageState.STAGED && staging.mounted()
        && !ctx.mounts().isMounted(base.stagingPath(stagingName))) {
      // A new allocation of a staged volume: never published from a staging the mount table lost.
      log.warn("staging {} of {} is no longer mounted: staged again before alloc {} is published",
          base.stagingPath(stagingName), c.key(), c.allocId());
      return staging.withState(StageState.LOST);
    }
    return staging;
  }

  /**
   * The controller plugin that publishes the volume to this node for this mount, if one does here. A controller
   * registered with PUBLISH_UNPUBLISH_VOLUME but not ready refuses the mount (its slot released): never skipped.
   */
  private Optional<ControllerPlugin> publishingController(VolumeClaim c, VolumeRecord base, boolean clusterPublished,
      boolean newVolume) throws VolumeException {
    if (clusterPublished) {
      return Optional.empty();
    }
    Optional<ControllerPlugin> controller = ctx.plugins().readyController(c.pluginId())
        .filter(p -> p.has(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME));
    if (controller.isEmpty() && base.controller() != ControllerState.PUBLISHED
        && ctx.plugins().registeredController(c.pluginId()).filter(i -> i.fingerprint().controllerCapabilities()
            .contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME)).isPresent()) {
      admission.release(newVolume, c.pluginId());
      throw new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "controller plugin " + c.pluginId() + " must publish " + c.volumeId() + " to this node but is not ready");
    }
    return controller;
  }

  // ---- steps 3 and 4: intent, calls, result ----

  private CompletableFuture<MountedVolume> run(MountPlan plan) {
    VolumeClaim c = plan.claim();
    VolumeKey key = c.key();
    VolumeRecord intent = plan.intent();
    CsiCalls.Uncertain uncertain = uncertainReporter(c);
    return commit.commit(key, plan.rec(), intent)
        .whenComplete((r, e) -> admission.release(plan.newVolume(), c.pluginId()))
        .thenCompose(r -> controllerPublish(plan, uncertain))
        .thenCompose(publishContext -> stage(plan, publishContext, uncertain))
        .thenCompose(publishContext -> publish(plan, publishContext, uncertain))
        .thenCompose(publishContext -> commit.commit(key, intent, plan.done(intent, publishContext,
            plan.stage() && ctx.mounts().isMountedNow(plan.stagingPath().orElseThrow()))))
        .whenComplete((done, e) -> inFlight.remove(key))
        .thenApply(done -> {
          log.info("mounted {} for alloc {} at {}", key, c.allocId(), plan.target());
          ctx.events().emit(VolumeEvent.Kind.MOUNTED, key, c.allocId(), plan.target().toString());
          return mounted(done, c.allocId(), c.usage());
        })
        .exceptionallyCompose(failure -> undoMount(plan.node(), c, Futures.unwrap(failure)));
  }

  private static String what(VolumeClaim c) {
    return "mount of " + c.volumeId() + " for alloc " + c.allocId();
  }

  /** A call of the mount sent again after an uncertain answer: said in the log, to listeners and in waitingFor. */
  private CsiCalls.Uncertain uncertainReporter(VolumeClaim c) {
    String what = what(c);
    return message -> {
      log.info("{} in flight: {}", what, message);
      inFlight.put(c.key(), what + ": " + message);
      ctx.events().emit(VolumeEvent.Kind.UNCERTAIN, c.key(), c.allocId(), message);
    };
  }

  /**
   * ControllerPublishVolume for every claim, with its own capability and read-only flag (idempotent for the
   * same arguments; a publication they are not compatible with is the plugin's ALREADY_EXISTS); without a
   * controller publish here, the publish context already known.
   */
  private CompletableFuture<Map<String, String>> controllerPublish(MountPlan plan, CsiCalls.Uncertain uncertain) {
    if (plan.controller().isEmpty()) {
      return CompletableFuture.completedFuture(plan.knownPublishContext());
    }
    ControllerPlugin controller = plan.controller().get();
    VolumeClaim c = plan.claim();
    boolean readOnly = c.readOnly() && controller.has(CsiCapabilities.PUBLISH_READONLY);
    return ctx.calls().callUntilDeadline("ControllerPublishVolume", what(c), uncertain, () -> controller.client()
            .controllerPublishVolumeAsync(new ControllerPublishRequest(c.volumeId(), plan.node().nodeId(),
                c.capability(), readOnly, c.secrets(), c.volumeContext())))
        .exceptionallyCompose(e -> CompletableFuture.failedFuture(incompatiblePublication(e, c)));
  }

  /** NodeStageVolume, if the plan stages, into the staging directory made for it. */
  private CompletableFuture<Map<String, String>> stage(MountPlan plan, Map<String, String> publishContext,
      CsiCalls.Uncertain uncertain) {
    if (!plan.stage()) {
      return CompletableFuture.completedFuture(publishContext);
    }
    VolumeClaim c = plan.claim();
    NodePlugin node = plan.node();
    Path staging = plan.stagingPath().orElseThrow();
    HostMounts.makeDirectories(staging, "staging path");
    return ctx.calls().callUntilDeadline("NodeStageVolume", what(c), uncertain, () -> node.client()
            .nodeStageVolumeAsync(new NodeStageRequest(c.volumeId(), publishContext, node.pluginPath(staging),
                c.capability(), c.secrets(), c.volumeContext())))
        .thenApply(x -> publishContext);
  }

  /** NodePublishVolume to the target (the plugin makes it; its parent is made here). */
  private CompletableFuture<Map<String, String>> publish(MountPlan plan, Map<String, String> publishContext,
      CsiCalls.Uncertain uncertain) {
    VolumeClaim c = plan.claim();
    NodePlugin node = plan.node();
    HostMounts.makeDirectories(plan.target().getParent(), "target's parent directory");
    return ctx.calls().callUntilDeadline("NodePublishVolume", what(c), uncertain, () -> node.client()
            .nodePublishVolumeAsync(new NodePublishRequest(c.volumeId(), publishContext,
                plan.stagingPath().map(node::pluginPath), node.pluginPath(plan.target()), c.capability(),
                c.readOnly(), c.secrets(), c.volumeContext())))
        .thenApply(x -> publishContext);
  }

  /** A controller publish's ALREADY_EXISTS: the volume is published to this node in a way this claim is not. */
  private static Throwable incompatiblePublication(Throwable failure, VolumeClaim c) {
    Throwable t = Futures.unwrap(failure);
    Optional<VolumeException> v = VolumeException.find(t);
    if (v.isPresent() && v.get().code().filter(code -> code == StatusCode.ALREADY_EXISTS).isPresent()) {
      return v.get().as(Reason.ACCESS_CONFLICT, "volume " + c.volumeId() + " is already published to this node in"
          + " a way incompatible with alloc " + c.allocId() + "'s claim (" + c.usage() + "): ");
    }
    return t;
  }

  /** A mount failed after (or while) committing its intent: undo what it did, then fail with its error. */
  private CompletableFuture<MountedVolume> undoMount(NodePlugin node, VolumeClaim c, Throwable failure) {
    VolumeKey key = c.key();
    String message = failure.getMessage();
    log.warn("mount of {} for alloc {} failed: {}", key, c.allocId(), message);
    ctx.events().emit(VolumeEvent.Kind.MOUNT_FAILED, key, c.allocId(), String.valueOf(message));
    VolumeRecord now = ctx.records().get(key);
    CompletableFuture<?> undo = now != null && now.hasWork() ? settler.settle(Optional.of(node), now, Optional.empty())
        : CompletableFuture.completedFuture(null);
    return undo.handle((r, e) -> null).thenCompose(x -> CompletableFuture.failedFuture(failure));
  }

  // ---- a recorded publication ----

  /**
   * The claim's allocation is recorded as published: its path is handed back only if the mount table still has
   * it (and its staging, if that was a mount); otherwise it is lost, marked so, and mounted again with the claim.
   */
  private CompletableFuture<MountedVolume> handBack(NodePlugin node, VolumeClaim c, VolumeRecord rec, UsageRecord u) {
    VolumeUsage usage = u.usage();
    Optional<MountPoints> table;
    try {
      table = ctx.mounts().read(); // one reading for the target and its staging
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    // The same rule as at start: what the table lost is marked so, this allocation's and any other's.
    VolumeRecord lost = table.map(t -> LostAndOrphanMounts.markLost(rec, t)).orElse(rec);
    if (lost.equals(rec)) {
      return CompletableFuture.completedFuture(mounted(rec, c.allocId(), usage)); // idempotent: nothing called
    }
    String what = LostAndOrphanMounts.describeLost(lost);
    log.warn("MOUNT LOST: {}", what);
    boolean own = lost.usages().get(usage).allocs().get(c.allocId()) == AllocPhase.LOST;
    ctx.events().emit(VolumeEvent.Kind.LOST, c.key(), own ? c.allocId() : "", what);
    return commit.commit(c.key(), rec, lost)
        .thenCompose(r -> settler.settle(Optional.of(node), r, Optional.of(c)))
        .thenCompose(r -> {
          UsageRecord now = r == null ? null : r.usages().get(usage);
          if (now != null && now.allocs().get(c.allocId()) == AllocPhase.PUBLISHED) {
            return CompletableFuture.completedFuture(mounted(r, c.allocId(), usage));
          }
          return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE, "volume " + c.key()
              + " was lost from the mount table and is not mounted again yet: "
              + settler.waitingFor().getOrDefault(c.key().toString(), "pending")));
        });
  }

  private static MountedVolume mounted(VolumeRecord r, String allocId, VolumeUsage usage) {
    UsageRecord u = r.usages().get(usage);
    return new MountedVolume(r.pluginId(), r.volumeId(), allocId, usage, r.targetPath(allocId, usage),
        r.stagingPathOf(u));
  }

  // ---- step 5: a node expansion the volume is owed ----

  /**
   * The NodeExpandVolume the volume is owed (ControllerExpandVolume asked for it while it was not published here),
   * after its NodePublishVolume (CSI), with the claim's secrets; then cleared. A failure leaves it owed, for the
   * next mount, and the mount stands.
   */
  private CompletableFuture<MountedVolume> expandOwed(NodePlugin node, VolumeClaim c, MountedVolume m) {
    VolumeKey key = c.key();
    VolumeRecord r = ctx.records().get(key);
    if (r == null || r.nodeExpansion().isEmpty()) {
      return CompletableFuture.completedFuture(m);
    }
    CapacityRange range = r.nodeExpansion().get();
    if (!node.has(CsiCapabilities.EXPAND_VOLUME)) {
      log.warn("volume {} was owed a node expansion, but node plugin {} no longer offers EXPAND_VOLUME: dropped",
          key, c.pluginId());
      return commit.commit(key, r, r.withNodeExpansion(Optional.empty())).handle((x, e) -> m);
    }
    String what = "node expansion of " + key + " owed since its ControllerExpandVolume";
    return ctx.calls().call("NodeExpandVolume", what, false, () -> node.client().nodeExpandVolumeAsync(
            new NodeExpandRequest(c.volumeId(), node.pluginPath(m.targetPath()), range,
                m.stagingPath().map(node::pluginPath), Optional.of(c.capability()), c.secrets())))
        .thenCompose(bytes -> commit.commit(key, r, r.withNodeExpansion(Optional.empty())).thenApply(x -> bytes))
        .handle((bytes, e) -> {
          if (e != null) {
            String why = Futures.unwrap(e).getMessage();
            log.warn("{} failed, still owed (tried again at its next mount): {}", what, why);
            ctx.events().emit(VolumeEvent.Kind.NODE_EXPANSION_OWED, key, c.allocId(),
                "NodeExpandVolume failed: " + why);
          } else {
            log.info("{} done at {} for alloc {}{}", what, m.targetPath(), c.allocId(),
                bytes == 0 ? "" : ": " + bytes + " bytes");
            ctx.events().emit(VolumeEvent.Kind.NODE_EXPANDED, key, c.allocId(), m.targetPath().toString());
          }
          return m;
        });
  }
}
