package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
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
 * <p>This class holds the records, takes the calls on their lanes and commits; its parts, each a reader can name
 * (in the kubelet's terms: the records are the desired state, {@link HostMounts} the actual one,
 * {@link VolumeSettler} the reconciler, {@link VolumeRestore} and {@link MountTableAudit} the reconstruction):
 * {@link VolumeMounter} with its {@link MountPlan} (one claim's mount), {@link VolumeAdmission} (the node's rules
 * before any call), {@link VolumeSettler}, {@link LostMountRedo} and {@link SettleRetries} (finishing pending work,
 * and when to try again), {@link UnmountWaiters}, {@link VolumeHealth} (stats and conditions),
 * {@link ProvisioningOperations} (create, delete, expand) and {@link VolumeEvents} (listeners).
 */
final class DefaultVolumeManager implements VolumeManager {
  private static final Logger log = LoggerFactory.getLogger(DefaultVolumeManager.class);

  private final StateStore store;
  private final Duration mountWait;
  private final GroupCommitStore committer; // the node's group commit (or one of our own in front of a plain store)
  private final boolean ownCommitter;
  private final VolumeLanes lanes = new VolumeLanes();
  private final CsiCalls calls;
  private final ReadyPlugins plugins;
  private final AtomicBoolean closed = new AtomicBoolean();

  private final Map<VolumeKey, VolumeRecord> records = new ConcurrentHashMap<>();
  /**
   * The keys of the records with work ({@link VolumeRecord#hasWork}; kept with {@code records} by {@link #commit}):
   * what a plugin becoming ready settles. Registry events reach {@link #nodeReady} on the registry's own thread (the
   * changing caller's), so it must not scan every record: a node of 10 000 volumes paid that scan in every health
   * flip of any plugin (benchmarks/README.md 21).
   */
  private final Set<VolumeKey> withWork = ConcurrentHashMap.newKeySet();
  private final List<String> recovered = new ArrayList<>();
  private final VolumeEvents events;
  private final VolumeAdmission admission = new VolumeAdmission(records);
  private final UnmountWaiters unmountWaiters = new UnmountWaiters();
  private final SettleRetries retries;
  private final VolumeHealth health;
  private final ProvisioningOperations provisioning;
  private final VolumeSettler settler;
  private final VolumeMounter mounter;
  private final MountTableAudit audit;
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
    this.plugins = new ReadyPlugins(b.registry, b.csiRoot, factory, b.scheduler, this::nodeReady);
    this.events = new VolumeEvents(b.clock);
    this.mounts = new HostMounts(b.mountTable, b.csiRoot);
    VolumeContext ctx = new VolumeContext(records, plugins, lanes, calls, events,
        new VolumeContext.Services(mounts, secrets, b.clusterClaims));
    this.retries = new SettleRetries(b.scheduler, b.initialBackoff, b.pendingRetryMax, b.random, this::settle);
    this.health = new VolumeHealth(ctx, b.scheduler, b.healthInterval);
    this.provisioning = new ProvisioningOperations(ctx, this::commit, mountWait);
    this.settler = new VolumeSettler(ctx, this::commit, retries);
    this.mounter = new VolumeMounter(ctx, admission, settler, this::commit, b.csiRoot);
    this.audit = new MountTableAudit(mounts, records, b.csiRoot);
  }

  static DefaultVolumeManager start(Builder b) {
    DefaultVolumeManager m = new DefaultVolumeManager(b);
    b.listeners.forEach(l -> m.events.add(l.getKey(), l.getValue())); // before any event can be emitted
    m.recovered.addAll(VolumeRestore.restore(
        m.givenRecords != null ? m.givenRecords : m.store.loadAll(VolumeKey.STORE_PREFIX), m.records));
    m.recovered.addAll(m.audit.atStart(m.committer));
    m.records.values().stream().filter(VolumeRecord::hasWork).forEach(r -> m.withWork.add(r.key()));
    m.plugins.start();
    m.health.start();
    return m;
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
        // Published here by this node's controller (not the cluster's) and not yet: a controller that must publish
        // and is not ready yet (just started or restarted) is waited for too, never skipped.
        .thenCompose(context -> context.isPresent() || controllerPublished(key)
            ? CompletableFuture.completedFuture(context)
            : plugins.awaitPublishingController(claim.pluginId(), mountWait).thenApply(x -> context))
        .thenCompose(context -> {
          claimed.set(true);
          VolumeClaim c = context.map(claim::withPublishContext).orElse(claim);
          return lanes.submit(key, () -> mounter.mount(c, context.isPresent()));
        })
        // A mount that failed after its claim (before or undoing its first step): the claim goes, once nothing of it
        // is left here. A claim that was refused (or not granted) is no claim of this mount.
        .whenComplete((m, e) -> clusterReleases.mountEnded(key, claim.allocId(), e != null && claimed.get()));
  }

  private boolean controllerPublished(VolumeKey key) {
    VolumeRecord r = records.get(key);
    return r != null && r.controller() == VolumeRecord.ControllerState.PUBLISHED;
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
    unmountWaiters.add(key, allocId, awaitedStaging(records.get(key), request), gone);
    secrets.giveController(key, request.controllerSecrets());
    lanes.submit(key, () -> unmountOnLane(request, gone)).whenComplete((v, e) -> {
      if (e != null) {
        // The intent could not be committed: nothing was done, the caller must know.
        unmountWaiters.fail(key, allocId, gone, Futures.unwrap(e));
      }
    });
    return gone;
  }

  /**
   * The staging an unmount's end waits for: the allocation's, or, for a forced unmount of an allocation already
   * gone, the volume's staging nothing uses any more (the tail the operator wants forced).
   */
  private static Optional<String> awaitedStaging(VolumeRecord known, UnmountRequest request) {
    String allocId = request.allocId();
    if (known == null) {
      return Optional.empty();
    }
    if (known.usageOf(allocId).isPresent()) {
      return known.usageOf(allocId).filter(UsageRecord::staged).map(UsageRecord::staging);
    }
    return request.force() ? known.stagings().keySet().stream().filter(n -> known.usersOf(n).isEmpty()).findFirst()
        : Optional.empty();
  }

  /** On the volume's lane: the unmount's intent committed, then settled; {@code gone} hears of the end. */
  private CompletableFuture<Void> unmountOnLane(UnmountRequest request, CompletableFuture<Void> gone) {
    VolumeKey key = request.key();
    VolumeRecord rec = records.get(key);
    boolean forcedTail = request.force() && rec != null && rec.hasWork();
    if (rec == null || (rec.usageOf(request.allocId()).isEmpty() && !forcedTail)) {
      unmountWaiters.nothingToDo(key, request.allocId(), gone);
      return CompletableFuture.completedFuture(null);
    }
    VolumeRecord intent = unmountIntent(rec, request);
    CompletableFuture<VolumeRecord> committed = intent.equals(rec) ? CompletableFuture.completedFuture(rec)
        : commit(key, rec, intent);
    return committed.thenCompose(r -> settler.settle(plugins.readyNode(key.pluginId()), r, Optional.empty()))
        .thenApply(r -> (Void) null);
  }

  /** The record an unmount commits before its first call: the allocation UNPUBLISHING (and FORCED, if it is). */
  private static VolumeRecord unmountIntent(VolumeRecord rec, UnmountRequest request) {
    String allocId = request.allocId();
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
          rec.key(), allocId, rec.pluginId());
      intent = intent.withForced(true);
    }
    return intent;
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
    return audit.collectOrphans(remove);
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
    for (VolumeKey key : withWork) {
      VolumeRecord r = key.pluginId().equals(pluginId) ? records.get(key) : null;
      if (r != null && r.hasWork()) {
        retries.clear(key);
        settle(key);
      }
    }
  }

  // ---- state ----

  /** The {@link RecordCommit} every part uses: through the group commit, then memory and who waits for it. */
  private CompletableFuture<VolumeRecord> commit(VolumeKey key, VolumeRecord previous, VolumeRecord next) {
    StateChange change = next == null || next.isEmpty()
        ? new StateChange.Delete(key.storeKey())
        : new StateChange.Put(key.storeKey(), VolumeRecordCodec.encode(next));
    return committer.applyAsync(List.of(change)).handle((v, e) -> {
      if (e != null) {
        throw new java.util.concurrent.CompletionException(new VolumeException(Reason.STATE_ERROR,
            "volume " + key + ": the state could not be committed, nothing was done: " + Futures.unwrap(e).getMessage(), Futures.unwrap(e)));
      }
      VolumeRecord before = records.get(key);
      if (next == null || next.isEmpty()) {
        records.remove(key);
        withWork.remove(key);
        health.forget(key);
        secrets.forget(key);
        settler.forget(key);
      } else {
        records.put(key, next);
        if (next.hasWork()) {
          withWork.add(key);
        } else {
          withWork.remove(key);
        }
      }
      clusterReleases.recordChanged(key, before); // first: an unmount's caller sees its claim's release asked
      unmountWaiters.recordChanged(key, records.get(key));
      return next;
    });
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
    mounter.inFlight().forEach((k, why) -> out.putIfAbsent(k.toString(), why));
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
