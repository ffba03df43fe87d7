package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.volumes.Plugins.ControllerPlugin;
import dev.csisupervisor.volumes.Plugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link VolumeManager}. Every operation on a volume runs on that volume's lane
 * ({@link VolumeLanes}); its record in {@code records} is changed only there, and only after the
 * change is committed, so memory always equals the store. An operation first commits its intent
 * (the phases it is about to act on), then makes its CSI calls, then commits the result. Whatever a
 * record says is not final ({@link VolumeRecord#hasWork()}) is driven to an end by
 * {@link VolumeSettler}: the same code undoes a failed mount, finishes an unmount, and recovers
 * after a crash.
 *
 * <p>This class holds the records and does mount, unmount and commit; its parts, each a reader can name:
 * {@link VolumeRestore} (the records a start finds), {@link VolumeAdmission} (the node's rules before any
 * call), {@link VolumeSettler} and {@link SettleRetries} (finishing pending work, and when to try again),
 * {@link UnmountWaiters}, {@link VolumeHealth} (stats and conditions), {@link ProvisioningOperations} (create,
 * delete, expand) and {@link VolumeEvents} (listeners).
 */
final class DefaultVolumeManager implements VolumeManager {
  private static final Logger log = LoggerFactory.getLogger(DefaultVolumeManager.class);

  private final StateStore store;
  private final Path csiRoot;
  private final Duration mountWait;
  private final GroupCommitStore committer; // the node's group commit (or one of our own in front of a plain store)
  private final boolean ownCommitter;
  private final VolumeLanes lanes = new VolumeLanes();
  private final CsiCalls calls;
  private final Plugins plugins;
  private final AtomicBoolean closed = new AtomicBoolean();

  private final Map<VolumeKey, VolumeRecord> records = new ConcurrentHashMap<>();
  /** Mounts whose call's outcome is uncertain, sent again: what happened (for waitingFor). */
  private final Map<VolumeKey, String> inFlight = new ConcurrentHashMap<>();
  private final List<String> recovered = new ArrayList<>();
  private final VolumeEvents events;
  private final VolumeAdmission admission = new VolumeAdmission(records);
  private final UnmountWaiters unmountWaiters = new UnmountWaiters();
  private final SettleRetries retries;
  private final VolumeHealth health;
  private final ProvisioningOperations provisioning;
  private final VolumeSettler settler;
  private final HostMounts mounts;
  private final VolumeSecrets secrets = new VolumeSecrets();

  private final Map<String, byte[]> givenRecords;
  private final ClusterClaims clusterClaims;
  private final ClusterReleases clusterReleases;

  private DefaultVolumeManager(Builder b) {
    this.store = b.stateStore;
    this.givenRecords = b.records;
    this.clusterClaims = b.clusterClaims;
    this.clusterReleases = new ClusterReleases(b.clusterClaims, records);
    this.csiRoot = b.csiRoot;
    this.mountWait = b.mountWait;
    this.committer = GroupCommitStore.sharing(b.stateStore);
    this.ownCommitter = committer != b.stateStore;
    this.calls = new CsiCalls(b);
    java.util.function.Function<Path, CsiClient> factory = b.clientFactory != null ? b.clientFactory
        : socket -> {
          try {
            return CsiClient.create(socket, b.clientOptions);
          } catch (dev.csisupervisor.client.SocketPathTooLongException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
          }
        };
    this.plugins = new Plugins(b.registry, b.csiRoot, factory, b.scheduler, this::nodeReady);
    this.events = new VolumeEvents(b.clock);
    this.mounts = new HostMounts(b.mountTable, b.csiRoot);
    VolumeContext ctx = new VolumeContext(records, plugins, lanes, calls, events,
        new VolumeContext.Services(mounts, secrets, b.clusterClaims));
    this.retries = new SettleRetries(b.scheduler, b.initialBackoff, b.pendingRetryMax, b.random, this::settle);
    this.health = new VolumeHealth(ctx, b.scheduler, b.healthInterval);
    this.provisioning = new ProvisioningOperations(ctx, this::commit);
    this.settler = new VolumeSettler(ctx, this::commit, retries);
  }

  static DefaultVolumeManager start(Builder b) {
    DefaultVolumeManager m = new DefaultVolumeManager(b);
    m.recovered.addAll(VolumeRestore.restore(
        m.givenRecords != null ? m.givenRecords : m.store.loadAll(VolumeKey.STORE_PREFIX), m.records));
    m.reconcileWithMountTable();
    m.plugins.start();
    m.health.start();
    if (m.clusterClaims != ClusterClaims.NONE) {
      // After the commit that took the allocation off the volume: its cluster claim goes.
      m.events.add(e -> {
        if (e.kind() == VolumeEvent.Kind.UNMOUNTED || e.kind() == VolumeEvent.Kind.ROLLED_BACK) {
          m.clusterReleases.allocGone(new VolumeKey(e.pluginId(), e.volumeId()), e.allocId());
        }
      }, Runnable::run);
    }
    return m;
  }

  /**
   * At start, before any plugin is followed: every record against the mount table. What it lost is marked so
   * (committed in one group) and mounted again once its plugin is ready; orphan mounts are reported, empty
   * directories no record names removed.
   */
  private void reconcileWithMountTable() {
    Optional<MountPoints> table;
    try {
      table = mounts.read();
    } catch (VolumeException e) {
      log.error("VOLUMES NOT CHECKED against the mount table: {}; recorded paths are checked again before "
          + "they are handed back", e.getMessage());
      recovered.add("mount table not read at start: " + e.getMessage());
      return;
    }
    if (table.isEmpty()) {
      return;
    }
    MountPoints m = table.get();
    long t0 = System.nanoTime();
    Map<VolumeKey, VolumeRecord> lost = new TreeMap<>(Comparator.comparing(VolumeKey::toString));
    for (VolumeRecord r : records.values()) {
      VolumeRecord marked = MountReconciler.markLost(r, m);
      if (!marked.equals(r)) {
        lost.put(r.key(), marked);
      }
    }
    if (!lost.isEmpty()) {
      List<StateChange> changes = lost.values().stream()
          .<StateChange>map(r -> new StateChange.Put(r.key().storeKey(), VolumeRecordCodec.encode(r))).toList();
      try {
        committer.apply(changes); // at start, on the builder's thread: it waits anyway (no commit thread, no hand-off)
        records.putAll(lost);
        for (VolumeRecord r : lost.values()) {
          String line = MountReconciler.describeLost(r);
          log.warn("MOUNT LOST: {}", line);
          recovered.add(line);
        }
      } catch (RuntimeException e) {
        log.error("{} volume(s) found lost could not be marked so ({}); they are checked again before their paths "
            + "are handed back", lost.size(), e.getMessage());
      }
    }
    long t1 = System.nanoTime();
    MountReconciler.Known known = MountReconciler.known(csiRoot, records.values());
    for (Path orphan : MountReconciler.orphans(known, m)) {
      String line = "orphan mount " + orphan + ": no volume record names it; csi-agent volume gc lists it, "
          + "csi-agent volume gc --yes unmounts it";
      log.warn("{}", line);
      recovered.add(line);
    }
    long t2 = System.nanoTime();
    for (Path d : MountReconciler.removeEmptyOrphanDirectories(known, m)) {
      log.info("removed empty directory {}: no volume record names it", d);
    }
    log.debug("checked {} volume record(s) against {} mount point(s): lost {} ms, orphans {} ms, empty directories {} ms",
        records.size(), m.size(), (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, (System.nanoTime() - t2) / 1_000_000);
  }

  // ---- mount ----

  @Override
  public CompletableFuture<MountedVolume> mount(VolumeClaim claim) {
    java.util.Objects.requireNonNull(claim, "claim");
    if (closed.get()) {
      return CompletableFuture.failedFuture(closedError());
    }
    VolumeKey key = claim.key();
    // Step 0 (in a cluster; NONE grants at once), once the node plugin is ready (its node id and topology go with
    // the claim): the claim, and the controller's publication to this node, before anything is done here.
    clusterReleases.mountStarted(key, claim.allocId());
    AtomicBoolean claimed = new AtomicBoolean();
    return plugins.awaitNode(claim.pluginId(), mountWait)
        .thenCompose(ready -> acquire(claim))
        .thenCompose(context -> {
          claimed.set(true);
          VolumeClaim c = context.map(claim::withPublishContext).orElse(claim);
          return lanes.submit(key, () -> mountOnLane(c, context.isPresent()));
        })
        // A mount that failed after its claim (before or undoing its first step): the claim goes, once nothing of it
        // is left here. A claim that was refused (or not granted) is no claim of this mount.
        .whenComplete((m, e) -> clusterReleases.mountEnded(key, claim.allocId(), e != null && claimed.get()));
  }

  private CompletableFuture<Optional<Map<String, String>>> acquire(VolumeClaim claim) {
    CompletableFuture<Optional<Map<String, String>>> granted;
    try {
      granted = clusterClaims.acquire(claim);
    } catch (RuntimeException e) {
      granted = CompletableFuture.failedFuture(e);
    }
    return granted.exceptionallyCompose(e -> CompletableFuture.failedFuture(new VolumeException(Reason.CLUSTER_REFUSED,
        "mount of " + claim.volumeId() + " for alloc " + claim.allocId() + ": " + Futures.unwrap(e).getMessage(),
        Futures.unwrap(e))));
  }

  private CompletableFuture<MountedVolume> mountOnLane(VolumeClaim c, boolean clusterPublished) {
    Optional<NodePlugin> found = plugins.readyNode(c.pluginId());
    if (found.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "node plugin " + c.pluginId() + " stopped being ready before the mount of " + c.volumeId() + " could start"));
    }
    NodePlugin node = found.get();
    VolumeRecord rec = records.get(c.key());
    // Step 1: finish what an earlier operation left (a crash, a failed rollback) and mount again what the mount
    // table lost (this claim's own publication with its secrets), so the rules see the truth.
    CompletableFuture<VolumeRecord> settled = rec != null && rec.hasWork()
        ? settler.settle(Optional.of(node), rec, Optional.of(c)) : CompletableFuture.completedFuture(rec);
    return settled.thenCompose(r -> mountSettled(node, c, r, clusterPublished))
        .thenCompose(m -> expandOwed(node, c, m));
  }

  /**
   * Step 5: the NodeExpandVolume the volume is owed (ControllerExpandVolume asked for it while it was not
   * published here), after its NodePublishVolume (CSI), with the claim's secrets; then cleared. A failure leaves
   * it owed, for the next mount, and the mount stands.
   */
  private CompletableFuture<MountedVolume> expandOwed(NodePlugin node, VolumeClaim c, MountedVolume m) {
    VolumeKey key = c.key();
    VolumeRecord r = records.get(key);
    if (r == null || r.nodeExpansion().isEmpty()) {
      return CompletableFuture.completedFuture(m);
    }
    CapacityRange range = r.nodeExpansion().get();
    if (!node.has(CsiCapabilities.EXPAND_VOLUME)) {
      log.warn("volume {} was owed a node expansion, but node plugin {} no longer offers EXPAND_VOLUME: dropped",
          key, c.pluginId());
      return commit(key, r, r.withNodeExpansion(Optional.empty())).handle((x, e) -> m);
    }
    String what = "node expansion of " + key + " owed since its ControllerExpandVolume";
    return calls.call("NodeExpandVolume", what, false, () -> node.client().nodeExpandVolumeAsync(
            new NodeExpandRequest(c.volumeId(), node.pluginPath(m.targetPath()), range,
                m.stagingPath().map(node::pluginPath), Optional.of(c.capability()), c.secrets())))
        .thenCompose(bytes -> commit(key, r, r.withNodeExpansion(Optional.empty())).thenApply(x -> bytes))
        .handle((bytes, e) -> {
          if (e != null) {
            String why = Futures.unwrap(e).getMessage();
            log.warn("{} failed, still owed (tried again at its next mount): {}", what, why);
            emit(VolumeEvent.Kind.NODE_EXPANSION_OWED, key, c.allocId(), "NodeExpandVolume failed: " + why);
          } else {
            log.info("{} done at {} for alloc {}{}", what, m.targetPath(), c.allocId(),
                bytes == 0 ? "" : ": " + bytes + " bytes");
            emit(VolumeEvent.Kind.NODE_EXPANDED, key, c.allocId(), m.targetPath().toString());
          }
          return m;
        });
  }

  /**
   * @param clusterPublished the cluster's controller agent made the controller publish ({@code c} carries its
   *     publish context): no controller call here
   */
  private CompletableFuture<MountedVolume> mountSettled(NodePlugin node, VolumeClaim c, VolumeRecord rec,
      boolean clusterPublished) {
    VolumeKey key = c.key();
    VolumeUsage usage = c.usage();
    // A record that only owes a node expansion is no volume here yet: it starts afresh, keeping what is owed.
    VolumeRecord base = rec != null && rec.onNode() ? rec : VolumeRecord.empty(key, plugins.pluginDir(node.info()))
        .withNodeExpansion(rec == null ? Optional.empty() : rec.nodeExpansion());
    UsageRecord existing = base.usages().get(usage);
    if (existing != null && existing.allocs().get(c.allocId()) == AllocPhase.PUBLISHED) {
      return handBack(node, c, rec, existing);
    }
    // One staging per volume (CSI): the usage's own if it has one, else the volume's.
    String stagingName = existing != null && existing.staged() ? existing.staging()
        : node.stages() ? base.stagingNameFor(usage) : "";
    Staging staging = stagingName.isEmpty() ? null : base.stagings().get(stagingName);
    if (staging != null && staging.state() == StageState.STAGED && staging.mounted()) {
      // A new allocation of a staged volume: never published from a staging the mount table lost.
      try {
        if (!mounts.isMounted(base.stagingPath(stagingName))) {
          log.warn("staging {} of {} is no longer mounted: staged again before alloc {} is published",
              base.stagingPath(stagingName), key, c.allocId());
          staging = staging.withState(StageState.LOST);
        }
      } catch (VolumeException e) {
        return CompletableFuture.failedFuture(e);
      }
    }
    // Step 2: the rules on this node, before any call.
    Optional<VolumeException> refused = admission.check(node, c, rec)
        .or(() -> admission.checkStaging(c, base, stagingName));
    if (refused.isPresent()) {
      return CompletableFuture.failedFuture(refused.get());
    }
    Path target = base.targetPath(c.allocId(), usage);
    if (!target.normalize().startsWith(csiRoot)) {
      return CompletableFuture.failedFuture(new IllegalArgumentException(
          "target path " + target + " would lie outside the CSI root " + csiRoot));
    }
    boolean newVolume = rec == null || !rec.onNode();
    if (newVolume) {
      Optional<VolumeException> full = admission.reserveSlot(node, c);
      if (full.isPresent()) {
        return CompletableFuture.failedFuture(full.get());
      }
    }
    boolean stage = !stagingName.isEmpty() && (staging == null || staging.state() != StageState.STAGED);
    Optional<ControllerPlugin> controller = clusterPublished ? Optional.empty() : plugins.readyController(c.pluginId())
        .filter(p -> p.has(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME));
    if (!clusterPublished && controller.isEmpty() && base.controller() != ControllerState.PUBLISHED
        && plugins.registeredController(c.pluginId()).filter(i -> i.fingerprint().controllerCapabilities()
            .contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME)).isPresent()) {
      admission.release(newVolume, c.pluginId());
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "controller plugin " + c.pluginId() + " must publish " + c.volumeId() + " to this node but is not ready"));
    }
    // ControllerPublishVolume for every claim, with its own capability and read-only flag (idempotent for the
    // same arguments; a publication they are not compatible with is the plugin's ALREADY_EXISTS).
    boolean controllerPublish = controller.isPresent();
    boolean firstPublish = controllerPublish && base.controller() != ControllerState.PUBLISHED;
    boolean readOnlyPublish = c.readOnly() && controller.map(p -> p.has(CsiCapabilities.PUBLISH_READONLY)).orElse(false);

    // Step 3: the intent, committed before the first call.
    UsageRecord u = existing != null ? existing : new UsageRecord(usage, c.capability(), stagingName, new TreeMap<>(), false);
    u = u.withNeedsClaim(u.needsClaim() || c.redoNeedsClaim());
    VolumeRecord intent = base.withUsage(u.withAlloc(c.allocId(), AllocPhase.PUBLISHING));
    if (stage) {
      intent = intent.withStaging(stagingName, new Staging(StageState.STAGING, false,
          staging != null ? staging.compatibility() : VolumeRecord.compatibility(c.capability())));
    }
    if (intent.volumeContext().isEmpty() && !c.volumeContext().isEmpty()) {
      intent = intent.withVolumeContext(c.volumeContext());
    }
    if (c.secretsFile().isPresent()) {
      intent = intent.withSecretsFile(c.secretsFile());
    }
    if (firstPublish) {
      intent = intent.withController(ControllerState.PUBLISHING, node.nodeId(), Map.of());
    }
    VolumeRecord committedIntent = intent;
    String what = "mount of " + c.volumeId() + " for alloc " + c.allocId();
    CsiCalls.Uncertain uncertain = message -> {
      log.info("{} in flight: {}", what, message);
      inFlight.put(key, what + ": " + message);
      emit(VolumeEvent.Kind.UNCERTAIN, key, c.allocId(), message);
    };
    Path stagingPath = stagingName.isEmpty() ? null : base.stagingPath(stagingName);
    Optional<Path> pluginStaging = Optional.ofNullable(stagingPath).map(node::pluginPath);
    return commit(key, rec, intent)
        .whenComplete((r, e) -> admission.release(newVolume, c.pluginId()))
        .thenCompose(r -> controllerPublish
            ? calls.callUntilDeadline("ControllerPublishVolume", what, uncertain, () -> controller.get().client()
                .controllerPublishVolumeAsync(new ControllerPublishRequest(c.volumeId(), node.nodeId(), c.capability(),
                    readOnlyPublish, c.secrets(), c.volumeContext())))
                .exceptionallyCompose(e -> CompletableFuture.failedFuture(incompatiblePublication(e, c)))
            : CompletableFuture.completedFuture(base.controller() == ControllerState.PUBLISHED
                ? base.publishContext() : c.publishContext()))
        .thenCompose(publishContext -> {
          if (!stage) {
            return CompletableFuture.completedFuture(publishContext);
          }
          makeDirectories(stagingPath, "staging path");
          return calls.callUntilDeadline("NodeStageVolume", what, uncertain, () -> node.client().nodeStageVolumeAsync(
              new NodeStageRequest(c.volumeId(), publishContext, pluginStaging.orElseThrow(), c.capability(),
                  c.secrets(), c.volumeContext()))).thenApply(x -> publishContext);
        })
        .thenCompose(publishContext -> {
          makeDirectories(target.getParent(), "target's parent directory");
          return calls.callUntilDeadline("NodePublishVolume", what, uncertain, () -> node.client().nodePublishVolumeAsync(
              new NodePublishRequest(c.volumeId(), publishContext, pluginStaging, node.pluginPath(target),
                  c.capability(), c.readOnly(), c.secrets(), c.volumeContext()))).thenApply(x -> publishContext);
        })
        // Step 4: the result.
        .thenCompose(publishContext -> {
          VolumeRecord done = committedIntent;
          done = done.withUsage(done.usages().get(usage).withAlloc(c.allocId(), AllocPhase.PUBLISHED));
          if (stage) {
            done = done.withStaging(stagingName, done.stagings().get(stagingName).withState(StageState.STAGED)
                .withMounted(mounts.isMountedNow(stagingPath)));
          }
          if (firstPublish) {
            done = done.withController(ControllerState.PUBLISHED, node.nodeId(), publishContext);
          } else if (done.controller() == ControllerState.NONE) {
            done = done.withController(ControllerState.NONE, "", publishContext);
          }
          return commit(key, committedIntent, done);
        })
        .whenComplete((done, e) -> inFlight.remove(key))
        .thenApply(done -> {
          log.info("mounted {} for alloc {} at {}", key, c.allocId(), target);
          emit(VolumeEvent.Kind.MOUNTED, key, c.allocId(), target.toString());
          return mounted(done, c.allocId(), usage);
        })
        .exceptionallyCompose(failure -> undoMount(node, key, c, Futures.unwrap(failure)));
  }

  /** A controller publish's ALREADY_EXISTS: the volume is published to this node in a way this claim is not. */
  private static Throwable incompatiblePublication(Throwable failure, VolumeClaim c) {
    Throwable t = Futures.unwrap(failure);
    Optional<VolumeException> v = VolumeException.find(t);
    if (v.isPresent() && v.get().code().filter(code -> code == dev.csisupervisor.client.StatusCode.ALREADY_EXISTS)
        .isPresent()) {
      return v.get().as(Reason.ACCESS_CONFLICT, "volume " + c.volumeId() + " is already published to this node in"
          + " a way incompatible with alloc " + c.allocId() + "'s claim (" + c.usage() + "): ");
    }
    return t;
  }

  /** A mount failed after (or while) committing its intent: undo what it did, then fail with its error. */
  private CompletableFuture<MountedVolume> undoMount(NodePlugin node, VolumeKey key, VolumeClaim c, Throwable failure) {
    String message = failure.getMessage();
    log.warn("mount of {} for alloc {} failed: {}", key, c.allocId(), message);
    emit(VolumeEvent.Kind.MOUNT_FAILED, key, c.allocId(), String.valueOf(message));
    VolumeRecord now = records.get(key);
    CompletableFuture<?> undo = now != null && now.hasWork() ? settler.settle(Optional.of(node), now, Optional.empty())
        : CompletableFuture.completedFuture(null);
    return undo.handle((r, e) -> null).thenCompose(x -> CompletableFuture.failedFuture(failure));
  }

  /**
   * The claim's allocation is recorded as published: its path is handed back only if the mount table still has
   * it (and its staging, if that was a mount); otherwise it is lost, marked so, and mounted again with the claim.
   */
  private CompletableFuture<MountedVolume> handBack(NodePlugin node, VolumeClaim c, VolumeRecord rec, UsageRecord u) {
    VolumeUsage usage = u.usage();
    Optional<MountPoints> table;
    try {
      table = mounts.read(); // one reading for the target and its staging
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    // The same rule as at start: what the table lost is marked so, this allocation's and any other's.
    VolumeRecord lost = table.map(t -> MountReconciler.markLost(rec, t)).orElse(rec);
    if (lost.equals(rec)) {
      return CompletableFuture.completedFuture(mounted(rec, c.allocId(), usage)); // idempotent: nothing called
    }
    String what = MountReconciler.describeLost(lost);
    log.warn("MOUNT LOST: {}", what);
    boolean own = lost.usages().get(usage).allocs().get(c.allocId()) == AllocPhase.LOST;
    emit(VolumeEvent.Kind.LOST, c.key(), own ? c.allocId() : "", what);
    return commit(c.key(), rec, lost)
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

  // ---- unmount ----

  @Override
  public CompletableFuture<Void> unmount(UnmountRequest request) {
    java.util.Objects.requireNonNull(request, "request");
    if (closed.get()) {
      return CompletableFuture.failedFuture(closedError());
    }
    VolumeKey key = request.key();
    String allocId = request.allocId();
    CompletableFuture<Void> gone = new CompletableFuture<>();
    VolumeRecord known = records.get(key);
    // The staging this unmount's end waits for: the allocation's, or, for a forced unmount of an allocation already
    // gone, the volume's staging nothing uses any more (the tail the operator wants forced).
    Optional<String> staging = known == null ? Optional.empty() : known.usageOf(allocId).isPresent()
        ? known.usageOf(allocId).filter(UsageRecord::staged).map(UsageRecord::staging)
        : request.force() ? known.stagings().keySet().stream().filter(n -> known.usersOf(n).isEmpty()).findFirst()
        : Optional.empty();
    unmountWaiters.add(key, allocId, staging, gone);
    secrets.giveController(key, request.controllerSecrets());
    lanes.submit(key, () -> {
      VolumeRecord rec = records.get(key);
      boolean forcedTail = request.force() && rec != null && rec.hasWork();
      if (rec == null || (rec.usageOf(allocId).isEmpty() && !forcedTail)) {
        unmountWaiters.nothingToDo(key, allocId, gone);
        return CompletableFuture.completedFuture(null);
      }
      VolumeRecord intent = rec;
      for (UsageRecord u : rec.usages().values()) {
        if (u.allocs().containsKey(allocId)) {
          intent = intent.withUsage(u.withAlloc(allocId, AllocPhase.UNPUBLISHING));
        }
      }
      if (request.secretsFile().isPresent()) {
        intent = intent.withSecretsFile(request.secretsFile());
      }
      if (request.force() && !rec.forced()) {
        log.warn("unmount of {} for alloc {} is FORCED: what node plugin {} cannot do, the agent does itself",
            key, allocId, key.pluginId());
        intent = intent.withForced(true);
      }
      CompletableFuture<VolumeRecord> committed = intent.equals(rec) ? CompletableFuture.completedFuture(rec)
          : commit(key, rec, intent);
      return committed.thenCompose(r -> settler.settle(plugins.readyNode(key.pluginId()), r, Optional.empty()))
          .thenApply(r -> (Void) null);
    }).whenComplete((v, e) -> {
      if (e != null) {
        // The intent could not be committed: nothing was done, the caller must know.
        unmountWaiters.fail(key, allocId, gone, Futures.unwrap(e));
      }
    });
    return gone;
  }

  @Override
  public CompletableFuture<List<String>> releaseAlloc(String allocId, boolean force) {
    VolumeIds.check("allocId", allocId);
    List<VolumeRecord> holding = list().stream().filter(r -> r.usageOf(allocId).isPresent()).toList();
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (VolumeRecord r : holding) {
      UnmountRequest u = UnmountRequest.of(r.pluginId(), r.volumeId(), allocId);
      all.add(unmount(force ? u.forced() : u));
    }
    List<String> names = holding.stream().map(r -> r.key().toString()).toList();
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(x -> names);
  }

  @Override
  public CompletableFuture<List<String>> retainAllocs(java.util.Set<String> live) {
    java.util.Objects.requireNonNull(live, "live");
    java.util.SortedSet<String> dead = new java.util.TreeSet<>();
    records.values().forEach(r -> r.allocs().stream().filter(a -> !live.contains(a)).forEach(dead::add));
    if (!dead.isEmpty()) {
      log.info("releasing the volumes of {} allocation(s) the task runner no longer runs: {}", dead.size(), dead);
    }
    List<CompletableFuture<List<String>>> all = dead.stream().map(a -> releaseAlloc(a, false)).toList();
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(x -> List.copyOf(dead));
  }

  @Override
  public CompletableFuture<List<OrphanMount>> collectOrphans(boolean remove) {
    Optional<MountPoints> table;
    try {
      table = mounts.read();
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (table.isEmpty()) {
      return CompletableFuture.completedFuture(List.of());
    }
    MountReconciler.Known known = MountReconciler.known(csiRoot, records.values());
    List<Path> found = MountReconciler.orphans(known, table.get());
    if (!remove) {
      return CompletableFuture.completedFuture(
          found.stream().map(p -> new OrphanMount(p, false, Optional.empty())).toList());
    }
    List<CompletableFuture<OrphanMount>> done = found.stream().map(p -> mounts.unmount(p).handle((x, e) -> {
      if (e == null) {
        log.warn("unmounted orphan mount {} (no volume record named it)", p);
        return new OrphanMount(p, true, Optional.empty());
      }
      return new OrphanMount(p, false, Optional.of(Futures.unwrap(e).getMessage()));
    })).toList();
    return CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).thenApply(x -> {
      try {
        MountReconciler.removeEmptyOrphanDirectories(MountReconciler.known(csiRoot, records.values()),
            mounts.read().orElseThrow());
      } catch (VolumeException e) {
        log.warn("empty orphan directories not removed: {}", e.getMessage());
      }
      return done.stream().map(CompletableFuture::join).toList();
    });
  }

  // ---- settling: rollback, finishing unmounts, recovery ----

  /** Settles the volume's pending work on its lane, if its node plugin is ready (else it waits for it). */
  private CompletableFuture<Void> settle(VolumeKey key) {
    return lanes.submit(key, () -> {
      VolumeRecord rec = records.get(key);
      if (closed.get() || rec == null || !rec.hasWork()) {
        return CompletableFuture.completedFuture(null);
      }
      // Without a ready node plugin only the controller step (and a forced record's own unmounts) can go on;
      // nodeReady() brings the rest back here.
      return settler.settle(plugins.readyNode(key.pluginId()), rec, Optional.empty()).thenApply(r -> null);
    });
  }

  /** The node or the controller plugin {@code pluginId} is ready (again): settle every volume of it with work, now. */
  private void nodeReady(String pluginId) {
    if (closed.get()) {
      return;
    }
    for (VolumeRecord r : records.values()) {
      if (r.pluginId().equals(pluginId) && r.hasWork()) {
        retries.clear(r.key());
        settle(r.key());
      }
    }
  }

  // ---- state ----

  /**
   * Commits {@code next} as the volume's record ({@code null} or empty: deleted), then makes it the
   * record in memory. {@code previous} is what memory holds now (for the log only).
   */
  private CompletableFuture<VolumeRecord> commit(VolumeKey key, VolumeRecord previous, VolumeRecord next) {
    StateChange change = next == null || next.isEmpty()
        ? new StateChange.Delete(key.storeKey())
        : new StateChange.Put(key.storeKey(), VolumeRecordCodec.encode(next));
    return committer.applyAsync(List.of(change)).handle((v, e) -> {
      if (e != null) {
        throw new java.util.concurrent.CompletionException(new VolumeException(Reason.STATE_ERROR,
            "volume " + key + ": the state could not be committed, nothing was done: " + Futures.unwrap(e).getMessage(), Futures.unwrap(e)));
      }
      if (next == null || next.isEmpty()) {
        records.remove(key);
        health.forget(key);
        secrets.forget(key);
        settler.forget(key);
      } else {
        records.put(key, next);
      }
      unmountWaiters.recordChanged(key, records.get(key));
      clusterReleases.recordChanged(key);
      return next;
    });
  }

  static void makeDirectories(Path dir, String what) {
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new java.util.concurrent.CompletionException(
          new VolumeException(Reason.LOCAL_IO, "cannot make the " + what + " " + dir + ": " + e, e));
    }
  }

  // ---- stats, expand, create, delete: their own parts ----

  @Override
  public CompletableFuture<VolumeStats> stats(String pluginId, String volumeId, Optional<String> allocId) {
    VolumeKey key = new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.checkVolume("volumeId", volumeId));
    allocId.ifPresent(a -> VolumeIds.check("allocId", a));
    return health.stats(key, allocId);
  }

  @Override
  public CompletableFuture<Long> expand(String pluginId, String volumeId, CapacityRange range, Secrets secrets) {
    return provisioning.expand(new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.checkVolume("volumeId", volumeId)),
        range, secrets);
  }

  @Override
  public CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets,
      Optional<TopologyRequirement> topology) {
    return provisioning.create(pluginId, name, capacity, capabilities, parameters, secrets, topology);
  }

  @Override
  public CompletableFuture<Void> delete(String pluginId, String volumeId, Secrets secrets) {
    return provisioning.delete(new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.checkVolume("volumeId", volumeId)),
        secrets);
  }

  // ---- queries, listeners, close ----

  @Override
  public List<VolumeRecord> list() {
    return records.values().stream().sorted(Comparator.comparing(r -> r.key().toString())).toList();
  }

  @Override
  public Optional<VolumeRecord> find(String pluginId, String volumeId) {
    return Optional.ofNullable(records.get(new VolumeKey(pluginId, volumeId)));
  }

  @Override
  public List<VolumeRecord> pending() {
    return list().stream().filter(VolumeRecord::hasWork).toList();
  }

  @Override
  public Map<String, String> waitingFor() {
    List<VolumeRecord> pending = pending();
    Map<String, String> out = new TreeMap<>(settler.waitingFor());
    out.keySet().retainAll(pending.stream().map(r -> r.key().toString()).toList());
    inFlight.forEach((k, why) -> out.putIfAbsent(k.toString(), why));
    for (VolumeRecord r : pending) {
      out.putIfAbsent(r.key().toString(), "in progress: " + VolumeSettler.describe(r));
    }
    return out;
  }

  @Override
  public Map<String, String> abnormal() {
    return health.abnormal();
  }

  @Override
  public List<String> recovered() {
    return List.copyOf(recovered);
  }

  @Override
  public CommitStats commitStats() {
    return new CommitStats(committer.commits(), committer.changes());
  }

  @Override
  public AutoCloseable addListener(VolumeListener listener, Executor executor) {
    return events.add(listener, executor);
  }

  private void emit(VolumeEvent.Kind kind, VolumeKey key, String allocId, String message) {
    events.emit(kind, key, allocId, message);
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    health.close();
    retries.close();
    unmountWaiters.failAll(closedError());
    plugins.close();
    if (ownCommitter) {
      committer.stop();
    }
    mounts.close();
  }

  private static VolumeException closedError() {
    return new VolumeException(Reason.CLOSED, "volume manager is closed; pending operations stay recorded for the next start");
  }
}
