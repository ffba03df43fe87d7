package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.volumes.Plugins.ControllerPlugin;
import dev.csisupervisor.volumes.Plugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
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
  private final GroupCommitter committer;
  private final VolumeLanes lanes = new VolumeLanes();
  private final CsiCalls calls;
  private final Plugins plugins;
  private final AtomicBoolean closed = new AtomicBoolean();

  private final Map<VolumeKey, VolumeRecord> records = new ConcurrentHashMap<>();
  private final List<String> recovered = new ArrayList<>();
  private final VolumeEvents events;
  private final VolumeAdmission admission = new VolumeAdmission(records);
  private final UnmountWaiters unmountWaiters = new UnmountWaiters();
  private final SettleRetries retries;
  private final VolumeHealth health;
  private final ProvisioningOperations provisioning;
  private final VolumeSettler settler;

  private final Map<String, byte[]> givenRecords;

  private DefaultVolumeManager(Builder b) {
    this.store = b.stateStore;
    this.givenRecords = b.records;
    this.csiRoot = b.csiRoot;
    this.mountWait = b.mountWait;
    this.committer = new GroupCommitter(b.stateStore);
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
    VolumeContext ctx = new VolumeContext(records, plugins, lanes, calls, events);
    this.retries = new SettleRetries(b.scheduler, b.initialBackoff, b.pendingRetryMax, b.random, this::settle);
    this.health = new VolumeHealth(ctx, b.scheduler, b.healthInterval);
    this.provisioning = new ProvisioningOperations(ctx);
    this.settler = new VolumeSettler(ctx, this::commit, retries);
  }

  static DefaultVolumeManager start(Builder b) {
    DefaultVolumeManager m = new DefaultVolumeManager(b);
    m.recovered.addAll(VolumeRestore.restore(
        m.givenRecords != null ? m.givenRecords : m.store.loadAll(VolumeKey.STORE_PREFIX), m.records));
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
    return plugins.awaitNode(claim.pluginId(), mountWait)
        .thenCompose(ready -> lanes.submit(key, () -> mountOnLane(claim)));
  }

  private CompletableFuture<MountedVolume> mountOnLane(VolumeClaim c) {
    Optional<NodePlugin> found = plugins.readyNode(c.pluginId());
    if (found.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "node plugin " + c.pluginId() + " stopped being ready before the mount of " + c.volumeId() + " could start"));
    }
    NodePlugin node = found.get();
    VolumeRecord rec = records.get(c.key());
    // Step 1: finish what an earlier operation left (a crash, a failed rollback), so the rules see the truth.
    CompletableFuture<VolumeRecord> settled = rec != null && rec.hasWork()
        ? settler.settle(node, rec) : CompletableFuture.completedFuture(rec);
    return settled.thenCompose(r -> mountSettled(node, c, r));
  }

  private CompletableFuture<MountedVolume> mountSettled(NodePlugin node, VolumeClaim c, VolumeRecord rec) {
    VolumeKey key = c.key();
    VolumeUsage usage = c.usage();
    VolumeRecord base = rec != null ? rec : VolumeRecord.empty(key, plugins.pluginDir(node.info()));
    UsageRecord existing = base.usages().get(usage);
    if (existing != null && existing.allocs().get(c.allocId()) == AllocPhase.PUBLISHED) {
      return CompletableFuture.completedFuture(mounted(base, c.allocId(), usage)); // idempotent: nothing called
    }
    // Step 2: the rules on this node, before any call.
    Optional<VolumeException> refused = admission.check(node, c, rec);
    if (refused.isPresent()) {
      return CompletableFuture.failedFuture(refused.get());
    }
    Path target = base.targetPath(c.allocId(), usage);
    if (!target.normalize().startsWith(csiRoot)) {
      return CompletableFuture.failedFuture(new IllegalArgumentException(
          "target path " + target + " would lie outside the CSI root " + csiRoot));
    }
    boolean newVolume = rec == null;
    if (newVolume) {
      Optional<VolumeException> full = admission.reserveSlot(node, c);
      if (full.isPresent()) {
        return CompletableFuture.failedFuture(full.get());
      }
    }
    boolean stage = node.stages() && (existing == null || existing.stage() != StageState.STAGED);
    Optional<ControllerPlugin> controller = plugins.readyController(c.pluginId())
        .filter(p -> p.has(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME));
    if (controller.isEmpty() && base.controller() != ControllerState.PUBLISHED
        && plugins.registeredController(c.pluginId()).filter(i -> i.fingerprint().controllerCapabilities()
            .contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME)).isPresent()) {
      admission.release(newVolume, c.pluginId());
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "controller plugin " + c.pluginId() + " must publish " + c.volumeId() + " to this node but is not ready"));
    }
    boolean controllerPublish = controller.isPresent() && base.controller() != ControllerState.PUBLISHED;

    // Step 3: the intent, committed before the first call.
    UsageRecord u = existing != null ? existing
        : new UsageRecord(usage, c.capability(), node.stages() ? StageState.STAGING : StageState.NOT_STAGED, new TreeMap<>());
    if (stage) {
      u = u.withStage(StageState.STAGING);
    }
    VolumeRecord intent = base.withUsage(u.withAlloc(c.allocId(), AllocPhase.PUBLISHING));
    if (controllerPublish) {
      intent = intent.withController(ControllerState.PUBLISHING, node.nodeId(), Map.of());
    }
    VolumeRecord committedIntent = intent;
    String what = "mount of " + c.volumeId() + " for alloc " + c.allocId();
    Path staging = base.stagingPath(usage);
    return commit(key, rec, intent)
        .whenComplete((r, e) -> admission.release(newVolume, c.pluginId()))
        .thenCompose(r -> controllerPublish
            ? calls.call("ControllerPublishVolume", what, false, () -> controller.get().client()
                .controllerPublishVolumeAsync(new ControllerPublishRequest(c.volumeId(), node.nodeId(), c.capability(),
                    c.readOnly(), c.secrets(), c.volumeContext())))
            : CompletableFuture.completedFuture(base.controller() == ControllerState.PUBLISHED
                ? base.publishContext() : c.publishContext()))
        .thenCompose(publishContext -> {
          if (!stage) {
            return CompletableFuture.completedFuture(publishContext);
          }
          makeDirectories(staging, "staging path");
          return calls.call("NodeStageVolume", what, false, () -> node.client().nodeStageVolumeAsync(
              new NodeStageRequest(c.volumeId(), publishContext, staging, c.capability(), c.secrets(),
                  c.volumeContext()))).thenApply(x -> publishContext);
        })
        .thenCompose(publishContext -> {
          makeDirectories(target.getParent(), "target's parent directory");
          return calls.call("NodePublishVolume", what, false, () -> node.client().nodePublishVolumeAsync(
              new NodePublishRequest(c.volumeId(), publishContext,
                  node.stages() ? Optional.of(staging) : Optional.empty(), target, c.capability(), c.readOnly(),
                  c.secrets(), c.volumeContext()))).thenApply(x -> publishContext);
        })
        // Step 4: the result.
        .thenCompose(publishContext -> {
          VolumeRecord done = committedIntent;
          UsageRecord du = done.usages().get(usage).withAlloc(c.allocId(), AllocPhase.PUBLISHED);
          if (du.stage() == StageState.STAGING) {
            du = du.withStage(StageState.STAGED);
          }
          done = done.withUsage(du);
          if (controllerPublish) {
            done = done.withController(ControllerState.PUBLISHED, node.nodeId(), publishContext);
          } else if (done.controller() == ControllerState.NONE) {
            done = done.withController(ControllerState.NONE, "", publishContext);
          }
          return commit(key, committedIntent, done);
        })
        .thenApply(done -> {
          log.info("mounted {} for alloc {} at {}", key, c.allocId(), target);
          emit(VolumeEvent.Kind.MOUNTED, key, c.allocId(), target.toString());
          return mounted(done, c.allocId(), usage);
        })
        .exceptionallyCompose(failure -> undoMount(node, key, c, Futures.unwrap(failure)));
  }

  /** A mount failed after (or while) committing its intent: undo what it did, then fail with its error. */
  private CompletableFuture<MountedVolume> undoMount(NodePlugin node, VolumeKey key, VolumeClaim c, Throwable failure) {
    String message = failure.getMessage();
    log.warn("mount of {} for alloc {} failed: {}", key, c.allocId(), message);
    emit(VolumeEvent.Kind.MOUNT_FAILED, key, c.allocId(), String.valueOf(message));
    VolumeRecord now = records.get(key);
    CompletableFuture<?> undo = now != null && now.hasWork() ? settler.settle(node, now)
        : CompletableFuture.completedFuture(null);
    return undo.handle((r, e) -> null).thenCompose(x -> CompletableFuture.failedFuture(failure));
  }

  private static MountedVolume mounted(VolumeRecord r, String allocId, VolumeUsage usage) {
    UsageRecord u = r.usages().get(usage);
    return new MountedVolume(r.pluginId(), r.volumeId(), allocId, usage, r.targetPath(allocId, usage),
        u.stage() == StageState.NOT_STAGED ? Optional.empty() : Optional.of(r.stagingPath(usage)));
  }

  // ---- unmount ----

  @Override
  public CompletableFuture<Void> unmount(String pluginId, String volumeId, String allocId) {
    VolumeKey key = new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId));
    VolumeIds.check("allocId", allocId);
    if (closed.get()) {
      return CompletableFuture.failedFuture(closedError());
    }
    CompletableFuture<Void> gone = new CompletableFuture<>();
    unmountWaiters.add(key, allocId, gone);
    lanes.submit(key, () -> {
      VolumeRecord rec = records.get(key);
      if (rec == null || rec.usageOf(allocId).isEmpty()) {
        unmountWaiters.recordChanged(key, rec);
        return CompletableFuture.completedFuture(null);
      }
      VolumeRecord intent = rec;
      for (UsageRecord u : rec.usages().values()) {
        if (u.allocs().containsKey(allocId)) {
          intent = intent.withUsage(u.withAlloc(allocId, AllocPhase.UNPUBLISHING));
        }
      }
      return commit(key, rec, intent).thenCompose(r -> {
        Optional<NodePlugin> node = plugins.readyNode(pluginId);
        if (node.isEmpty()) {
          log.warn("unmount of {} for alloc {} is pending: node plugin {} is not ready; it is finished when it is",
              key, allocId, pluginId);
          emit(VolumeEvent.Kind.PENDING, key, allocId, "node plugin " + pluginId + " is not ready");
          return CompletableFuture.completedFuture(null);
        }
        return settler.settle(node.get(), r).thenApply(x -> null);
      });
    }).whenComplete((v, e) -> {
      if (e != null) {
        // The intent could not be committed: nothing was done, the caller must know.
        unmountWaiters.fail(key, allocId, gone, Futures.unwrap(e));
      }
    });
    return gone;
  }

  // ---- settling: rollback, finishing unmounts, recovery ----

  /** Settles the volume's pending work on its lane, if its node plugin is ready (else it waits for it). */
  private CompletableFuture<Void> settle(VolumeKey key) {
    return lanes.submit(key, () -> {
      VolumeRecord rec = records.get(key);
      if (closed.get() || rec == null || !rec.hasWork()) {
        return CompletableFuture.completedFuture(null);
      }
      Optional<NodePlugin> node = plugins.readyNode(key.pluginId());
      if (node.isEmpty()) {
        return CompletableFuture.completedFuture(null); // nodeReady() brings it back here
      }
      return settler.settle(node.get(), rec).thenApply(r -> null);
    });
  }

  /** A node plugin is ready (again): settle every volume of it with pending work, now. */
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
    return committer.commit(List.of(change)).handle((v, e) -> {
      if (e != null) {
        throw new java.util.concurrent.CompletionException(new VolumeException(Reason.STATE_ERROR,
            "volume " + key + ": the state could not be committed, nothing was done: " + Futures.unwrap(e).getMessage(), Futures.unwrap(e)));
      }
      if (next == null || next.isEmpty()) {
        records.remove(key);
        health.forget(key);
      } else {
        records.put(key, next);
      }
      unmountWaiters.recordChanged(key, records.get(key));
      return next;
    });
  }

  private static void makeDirectories(Path dir, String what) {
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
    VolumeKey key = new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId));
    allocId.ifPresent(a -> VolumeIds.check("allocId", a));
    return health.stats(key, allocId);
  }

  @Override
  public CompletableFuture<Long> expand(String pluginId, String volumeId, CapacityRange range, Secrets secrets) {
    return provisioning.expand(new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId)),
        range, secrets);
  }

  @Override
  public CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets) {
    return provisioning.create(pluginId, name, capacity, capabilities, parameters, secrets);
  }

  @Override
  public CompletableFuture<Void> delete(String pluginId, String volumeId, Secrets secrets) {
    return provisioning.delete(new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId)),
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
    committer.close();
  }

  private static VolumeException closedError() {
    return new VolumeException(Reason.CLOSED, "volume manager is closed; pending operations stay recorded for the next start");
  }
}
