package dev.csisupervisor.volumes;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.NodePublishRequest;
import dev.csisupervisor.client.NodeStageRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.common.ExponentialBackoff;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.volumes.Plugins.ControllerPlugin;
import dev.csisupervisor.volumes.Plugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import dev.csisupervisor.volumes.VolumeRecordCodec.RecordFormatException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link VolumeManager}. Every operation on a volume runs on that volume's lane
 * ({@link VolumeLanes}); its record in {@code records} is changed only there, and only after the
 * change is committed, so memory always equals the store. An operation first commits its intent
 * (the phases it is about to act on), then makes its CSI calls, then commits the result. Whatever a
 * record says is not final ({@link VolumeRecord#hasWork()}) is driven to an end by
 * {@link #settleSteps}: the same code undoes a failed mount, finishes an unmount, and recovers
 * after a crash.
 */
final class DefaultVolumeManager implements VolumeManager {
  private static final Logger log = LoggerFactory.getLogger(DefaultVolumeManager.class);

  private record Listener(VolumeListener listener, Executor executor) {}

  private final StateStore store;
  private final Path csiRoot;
  private final ScheduledExecutorService scheduler;
  private final Clock clock;
  private final Duration mountWait;
  private final Duration initialBackoff;
  private final Duration pendingRetryMax;
  private final Duration healthInterval;
  private final java.util.Random random;
  private final GroupCommitter committer;
  private final VolumeLanes lanes = new VolumeLanes();
  private final CsiCalls calls;
  private final Plugins plugins;
  private final AtomicBoolean closed = new AtomicBoolean();

  private final Map<VolumeKey, VolumeRecord> records = new ConcurrentHashMap<>();
  private final List<String> recovered = new ArrayList<>();
  private final Map<VolumeKey, String> abnormal = new ConcurrentHashMap<>();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();

  private final Object lock = new Object();
  /** (volume, alloc) -> unmount futures waiting for the alloc to be gone from the record; guarded by lock. */
  private final Map<VolumeKey, Map<String, List<CompletableFuture<Void>>>> unmountWaiters = new HashMap<>();
  /** Pending work's next try and its backoff; guarded by lock. */
  private final Map<VolumeKey, ScheduledFuture<?>> retryTimers = new HashMap<>();
  private final Map<VolumeKey, ExponentialBackoff> retryBackoffs = new HashMap<>();
  /** New volumes being mounted whose intent is not committed yet, per plugin (max_volumes_per_node); guarded by lock. */
  private final Map<String, Integer> reservedSlots = new HashMap<>();
  private volatile ScheduledFuture<?> healthTask;

  private final Map<String, byte[]> givenRecords;

  private DefaultVolumeManager(Builder b) {
    this.store = b.stateStore;
    this.givenRecords = b.records;
    this.csiRoot = b.csiRoot;
    this.scheduler = b.scheduler;
    this.clock = b.clock;
    this.mountWait = b.mountWait;
    this.initialBackoff = b.initialBackoff;
    this.pendingRetryMax = b.pendingRetryMax;
    this.healthInterval = b.healthInterval;
    this.random = b.random;
    this.committer = new GroupCommitter(b.stateStore);
    this.calls = new CsiCalls(b.scheduler, b.random, b.maxAttempts, b.initialBackoff, b.maxBackoff, b.observer,
        b.nanoTime);
    java.util.function.Function<Path, CsiClient> factory = b.clientFactory != null ? b.clientFactory
        : socket -> {
          try {
            return CsiClient.create(socket, b.clientOptions);
          } catch (dev.csisupervisor.client.SocketPathTooLongException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
          }
        };
    this.plugins = new Plugins(b.registry, b.csiRoot, factory, b.scheduler, this::nodeReady);
  }

  static DefaultVolumeManager start(Builder b) {
    DefaultVolumeManager m = new DefaultVolumeManager(b);
    m.restore();
    m.plugins.start();
    m.scheduleHealthRound();
    return m;
  }

  // ---- restore ----

  private void restore() {
    int skipped = 0;
    Map<String, byte[]> stored = givenRecords != null ? givenRecords : store.loadAll(VolumeKey.STORE_PREFIX);
    for (Map.Entry<String, byte[]> e : stored.entrySet()) {
      if (!e.getKey().startsWith(VolumeKey.STORE_PREFIX)) {
        continue;
      }
      try {
        VolumeRecord r = VolumeRecordCodec.decode(e.getKey(), e.getValue());
        records.put(r.key(), r);
        if (r.hasWork()) {
          recovered.add(describeWork(r));
        }
      } catch (RecordFormatException ex) {
        // Left in the store untouched (a newer agent's record survives a downgrade); never guessed at.
        skipped++;
        recovered.add("volume record " + e.getKey() + " skipped: " + ex.getMessage());
        log.error("VOLUME RECORD SKIPPED: {} cannot be read ({}); it stays in the state store untouched",
            e.getKey(), ex.getMessage());
      }
    }
    if (!records.isEmpty() || skipped > 0) {
      log.info("restored {} volume record(s) ({} with an interrupted operation, {} skipped)", records.size(),
          records.values().stream().filter(VolumeRecord::hasWork).count(), skipped);
    }
    for (String line : recovered) {
      log.warn("volume recovery: {}", line);
    }
  }

  private static String describeWork(VolumeRecord r) {
    List<String> parts = new ArrayList<>();
    for (UsageRecord u : r.usages().values()) {
      u.allocs().forEach((alloc, phase) -> {
        if (phase == AllocPhase.PUBLISHING) {
          parts.add("interrupted mount for alloc " + alloc + " (" + u.usage() + "): rolled back");
        } else if (phase == AllocPhase.UNPUBLISHING) {
          parts.add("interrupted unmount for alloc " + alloc + " (" + u.usage() + "): finished");
        }
      });
      if (u.allocs().isEmpty() && u.stage() != StageState.NOT_STAGED) {
        parts.add("staging " + u.usage() + " used by no allocation: unstaged");
      }
    }
    if (r.controller() == ControllerState.PUBLISHING || (r.controller() == ControllerState.PUBLISHED && r.usages().isEmpty())) {
      parts.add("controller publication to " + r.controllerNodeId() + " unused: unpublished");
    }
    return "volume " + r.key() + ": " + String.join("; ", parts) + " once plugin " + r.pluginId() + " is ready";
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
        ? settleSteps(node, rec) : CompletableFuture.completedFuture(rec);
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
    Optional<VolumeException> refused = checkRules(node, c, rec);
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
      Optional<VolumeException> full = reserveSlot(node, c);
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
      release(newVolume, c.pluginId());
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
        .whenComplete((r, e) -> release(newVolume, c.pluginId()))
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
        .exceptionallyCompose(failure -> undoMount(node, key, c, unwrap(failure)));
  }

  /** A mount failed after (or while) committing its intent: undo what it did, then fail with its error. */
  private CompletableFuture<MountedVolume> undoMount(NodePlugin node, VolumeKey key, VolumeClaim c, Throwable failure) {
    String message = failure.getMessage();
    log.warn("mount of {} for alloc {} failed: {}", key, c.allocId(), message);
    emit(VolumeEvent.Kind.MOUNT_FAILED, key, c.allocId(), String.valueOf(message));
    VolumeRecord now = records.get(key);
    CompletableFuture<?> undo = now != null && now.hasWork() ? settleSteps(node, now)
        : CompletableFuture.completedFuture(null);
    return undo.handle((r, e) -> null).thenCompose(x -> CompletableFuture.failedFuture(failure));
  }

  private Optional<VolumeException> checkRules(NodePlugin node, VolumeClaim c, VolumeRecord rec) {
    AccessMode mode = c.capability().accessMode();
    if (mode.needsSingleNodeMultiWriterCapability() && !node.has(CsiCapabilities.SINGLE_NODE_MULTI_WRITER)) {
      return Optional.of(new VolumeException(Reason.UNSUPPORTED, "node plugin " + c.pluginId()
          + " does not offer SINGLE_NODE_MULTI_WRITER, which access mode " + mode + " needs"));
    }
    if (!c.capability().volumeMountGroup().isEmpty() && !node.has("VOLUME_MOUNT_GROUP")) {
      return Optional.of(new VolumeException(Reason.UNSUPPORTED, "node plugin " + c.pluginId()
          + " does not offer VOLUME_MOUNT_GROUP, which volumeMountGroup needs"));
    }
    if (rec == null) {
      return Optional.empty();
    }
    for (UsageRecord u : rec.usages().values()) {
      for (String holder : u.allocs().keySet()) {
        if (holder.equals(c.allocId())) {
          continue;
        }
        AccessMode held = u.usage().accessMode();
        if (mode == AccessMode.SINGLE_NODE_SINGLE_WRITER || held == AccessMode.SINGLE_NODE_SINGLE_WRITER) {
          return Optional.of(conflict(c, holder, "is SINGLE_NODE_SINGLE_WRITER: one allocation only"));
        }
        boolean oneWriter = (c.usage().writes() && mode.singleWriter()) || (u.usage().writes() && held.singleWriter());
        if (oneWriter && c.usage().writes() && u.usage().writes()) {
          return Optional.of(conflict(c, holder, "allows one writer (" + (mode.singleWriter() ? mode : held)
              + ") and that allocation writes to it"));
        }
      }
    }
    return Optional.empty();
  }

  private static VolumeException conflict(VolumeClaim c, String holder, String why) {
    return new VolumeException(Reason.ACCESS_CONFLICT, "volume " + c.volumeId() + " of plugin " + c.pluginId()
        + " is held by alloc " + holder + " on this node and " + why + "; alloc " + c.allocId() + " is refused");
  }

  private Optional<VolumeException> reserveSlot(NodePlugin node, VolumeClaim c) {
    long max = node.maxVolumes();
    synchronized (lock) {
      if (max > 0) {
        long used = records.keySet().stream().filter(k -> k.pluginId().equals(c.pluginId())).count()
            + reservedSlots.getOrDefault(c.pluginId(), 0);
        if (used >= max) {
          return Optional.of(new VolumeException(Reason.LIMIT_REACHED, "node plugin " + c.pluginId()
              + " allows " + max + " volume(s) per node (max_volumes_per_node) and " + used
              + " are in use here; volume " + c.volumeId() + " for alloc " + c.allocId() + " is refused"));
        }
      }
      reservedSlots.merge(c.pluginId(), 1, Integer::sum);
    }
    return Optional.empty();
  }

  private void release(boolean reserved, String pluginId) {
    if (!reserved) {
      return;
    }
    synchronized (lock) {
      reservedSlots.computeIfPresent(pluginId, (k, n) -> n <= 1 ? null : n - 1);
    }
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
    synchronized (lock) {
      unmountWaiters.computeIfAbsent(key, k -> new HashMap<>()).computeIfAbsent(allocId, k -> new ArrayList<>()).add(gone);
    }
    lanes.submit(key, () -> {
      VolumeRecord rec = records.get(key);
      if (rec == null || rec.usageOf(allocId).isEmpty()) {
        notifyWaiters(key);
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
        return settleSteps(node.get(), r).thenApply(x -> null);
      });
    }).whenComplete((v, e) -> {
      if (e != null) {
        // The intent could not be committed: nothing was done, the caller must know.
        failWaiter(key, allocId, gone, unwrap(e));
      }
    });
    return gone;
  }

  private void failWaiter(VolumeKey key, String allocId, CompletableFuture<Void> waiter, Throwable failure) {
    synchronized (lock) {
      Map<String, List<CompletableFuture<Void>>> byAlloc = unmountWaiters.get(key);
      if (byAlloc != null && byAlloc.containsKey(allocId)) {
        byAlloc.get(allocId).remove(waiter);
        if (byAlloc.get(allocId).isEmpty()) {
          byAlloc.remove(allocId);
        }
        if (byAlloc.isEmpty()) {
          unmountWaiters.remove(key);
        }
      }
    }
    waiter.completeExceptionally(failure);
  }

  /**
   * Completes the unmount futures of every allocation the record no longer has, once nothing of the
   * volume is left in flight (an unstage or controller unpublish that follows the last unpublish is
   * part of the unmount).
   */
  private void notifyWaiters(VolumeKey key) {
    VolumeRecord r = records.get(key);
    List<CompletableFuture<Void>> done = new ArrayList<>();
    synchronized (lock) {
      Map<String, List<CompletableFuture<Void>>> byAlloc = unmountWaiters.get(key);
      if (byAlloc == null) {
        return;
      }
      byAlloc.entrySet().removeIf(e -> {
        if (r == null || (r.usageOf(e.getKey()).isEmpty() && !r.hasWork())) {
          done.addAll(e.getValue());
          return true;
        }
        return false;
      });
      if (byAlloc.isEmpty()) {
        unmountWaiters.remove(key);
      }
    }
    done.forEach(f -> f.complete(null));
  }

  // ---- settling: rollback, finishing unmounts, recovery ----

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
  private CompletableFuture<VolumeRecord> settleSteps(NodePlugin node, VolumeRecord start) {
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
        chain = chain.thenCompose(x -> calls.call("NodeUnpublishVolume", (rollback ? "rollback of the mount of "
                : "unmount of ") + start.volumeId() + " for alloc " + alloc, true,
            () -> node.client().nodeUnpublishVolumeAsync(start.volumeId(), target)))
            .thenRun(() -> {
              UsageRecord now = p.record.usages().get(u.usage());
              p.record = p.record.withUsage(now.withoutAlloc(alloc));
              removeEmptyDirectories(target.getParent(), start.pluginDir().resolve("per-alloc"));
              p.events.add(() -> {
                log.info("{} {} for alloc {}", rollback ? "rolled back the mount of" : "unmounted", key, alloc);
                emit(rollback ? VolumeEvent.Kind.ROLLED_BACK : VolumeEvent.Kind.UNMOUNTED, key, alloc, target.toString());
              });
            });
      }
    }
    chain = chain.thenCompose(x -> unstageUnused(node, p, what));
    chain = chain.thenCompose(x -> controllerUnpublishIfUnused(p, what));
    return chain.handle((x, failure) -> failure == null ? null : unwrap(failure))
        .thenCompose(failure -> {
          VolumeRecord end = p.record;
          CompletableFuture<VolumeRecord> saved = end.equals(start)
              ? CompletableFuture.completedFuture(start) : commit(key, start, end);
          return saved.handle((r, commitFailure) -> {
            if (commitFailure == null) {
              p.events.forEach(Runnable::run);
            }
            VolumeRecord now = records.getOrDefault(key, null);
            if (failure != null || commitFailure != null) {
              Throwable why = failure != null ? failure : unwrap(commitFailure);
              log.warn("volume {}: pending work left ({}); retrying", key, why.getMessage());
              emit(VolumeEvent.Kind.PENDING, key, "", String.valueOf(why.getMessage()));
              scheduleRetry(key);
            } else {
              clearRetry(key);
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
      chain = chain.thenCompose(x -> calls.call("NodeUnstageVolume", what, true,
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
    Optional<ControllerPlugin> controller = plugins.readyController(r.pluginId());
    if (controller.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "controller plugin " + r.pluginId() + " must unpublish " + r.volumeId() + " from " + r.controllerNodeId()
              + " but is not ready"));
    }
    // No secrets here: the unmount must work with what the node has (CSI makes them optional).
    return calls.call("ControllerUnpublishVolume", what, true, () -> controller.get().client()
            .controllerUnpublishVolumeAsync(r.volumeId(), r.controllerNodeId(), Secrets.none()))
        .thenRun(() -> p.record = p.record.withController(ControllerState.NONE, "", Map.of()));
  }

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
      return settleSteps(node.get(), rec).thenApply(r -> null);
    });
  }

  /** A node plugin is ready (again): settle every volume of it with pending work, now. */
  private void nodeReady(String pluginId) {
    if (closed.get()) {
      return;
    }
    for (VolumeRecord r : records.values()) {
      if (r.pluginId().equals(pluginId) && r.hasWork()) {
        clearRetry(r.key());
        settle(r.key());
      }
    }
  }

  private void scheduleRetry(VolumeKey key) {
    synchronized (lock) {
      if (closed.get()) {
        return;
      }
      ExponentialBackoff backoff = retryBackoffs.computeIfAbsent(key,
          k -> ExponentialBackoff.doubling(initialBackoff, pendingRetryMax, random));
      ScheduledFuture<?> old = retryTimers.remove(key);
      if (old != null) {
        old.cancel(false);
      }
      try {
        retryTimers.put(key, scheduler.schedule(() -> {
          synchronized (lock) {
            retryTimers.remove(key);
          }
          settle(key);
        }, backoff.next().toNanos(), TimeUnit.NANOSECONDS));
      } catch (RejectedExecutionException e) {
        log.debug("scheduler stopped: volume {} stays pending for the next start", key);
      }
    }
  }

  private void clearRetry(VolumeKey key) {
    synchronized (lock) {
      ScheduledFuture<?> t = retryTimers.remove(key);
      if (t != null) {
        t.cancel(false);
      }
      retryBackoffs.remove(key);
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
            "volume " + key + ": the state could not be committed, nothing was done: " + unwrap(e).getMessage(), unwrap(e)));
      }
      if (next == null || next.isEmpty()) {
        records.remove(key);
        abnormal.remove(key);
      } else {
        records.put(key, next);
      }
      notifyWaiters(key);
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

  // ---- stats, health, expand, create, delete ----

  @Override
  public CompletableFuture<VolumeStats> stats(String pluginId, String volumeId, Optional<String> allocId) {
    VolumeKey key = new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId));
    allocId.ifPresent(a -> VolumeIds.check("allocId", a));
    return lanes.submit(key, () -> statsOnLane(key, allocId));
  }

  private CompletableFuture<VolumeStats> statsOnLane(VolumeKey key, Optional<String> allocId) {
    VolumeRecord r = records.get(key);
    Optional<Map.Entry<String, UsageRecord>> published = r == null ? Optional.empty()
        : r.usages().values().stream()
            .flatMap(u -> u.allocs().entrySet().stream().filter(a -> a.getValue() == AllocPhase.PUBLISHED)
                .filter(a -> allocId.isEmpty() || allocId.get().equals(a.getKey()))
                .map(a -> Map.entry(a.getKey(), u)))
            .findFirst();
    if (published.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.NOT_MOUNTED, "volume " + key
          + " is not mounted on this node" + allocId.map(a -> " for alloc " + a).orElse("")));
    }
    Optional<NodePlugin> node = plugins.readyNode(key.pluginId());
    if (node.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "node plugin " + key.pluginId() + " is not ready"));
    }
    if (!node.get().has(CsiCapabilities.GET_VOLUME_STATS)) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.UNSUPPORTED,
          "node plugin " + key.pluginId() + " does not offer GET_VOLUME_STATS"));
    }
    UsageRecord u = published.get().getValue();
    Path target = r.targetPath(published.get().getKey(), u.usage());
    Optional<Path> staging = u.stage() == StageState.NOT_STAGED ? Optional.empty() : Optional.of(r.stagingPath(u.usage()));
    return calls.call("NodeGetVolumeStats", "stats of " + key, false,
        () -> node.get().client().nodeGetVolumeStatsAsync(key.volumeId(), target, staging));
  }

  /** The next health round, {@code healthInterval} from now (one-shot tasks: the next is scheduled by this one). */
  private void scheduleHealthRound() {
    if (healthInterval.isZero() || closed.get()) {
      return;
    }
    try {
      healthTask = scheduler.schedule(() -> {
        try {
          checkConditions();
        } finally {
          scheduleHealthRound();
        }
      }, healthInterval.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      log.debug("scheduler stopped: no more volume health rounds");
    }
  }

  /** One health round: the condition of every published volume whose plugin reports conditions. */
  private void checkConditions() {
    if (closed.get()) {
      return;
    }
    for (VolumeRecord r : records.values()) {
      boolean published = r.usages().values().stream().anyMatch(UsageRecord::hasPublished);
      Optional<NodePlugin> node = plugins.readyNode(r.pluginId());
      if (!published || node.isEmpty() || !node.get().has(CsiCapabilities.GET_VOLUME_STATS)
          || !node.get().has(CsiCapabilities.VOLUME_CONDITION)) {
        continue;
      }
      VolumeKey key = r.key();
      lanes.submit(key, () -> statsOnLane(key, Optional.empty())).whenComplete((stats, e) -> {
        if (e != null) {
          log.debug("condition of {} not read: {}", key, unwrap(e).getMessage());
          return;
        }
        stats.condition().ifPresent(c -> {
          String before = c.abnormal() ? abnormal.put(key, c.message()) : abnormal.remove(key);
          if (c.abnormal() && before == null) {
            log.warn("volume {} is abnormal: {}", key, c.message());
            emit(VolumeEvent.Kind.ABNORMAL, key, "", c.message());
          } else if (!c.abnormal() && before != null) {
            log.info("volume {} is normal again", key);
            emit(VolumeEvent.Kind.NORMAL, key, "", c.message());
          }
        });
      });
    }
  }

  @Override
  public CompletableFuture<Long> expand(String pluginId, String volumeId, CapacityRange range, Secrets secrets) {
    VolumeKey key = new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId));
    java.util.Objects.requireNonNull(range, "range");
    java.util.Objects.requireNonNull(secrets, "secrets");
    return lanes.submit(key, () -> {
      String what = "expansion of " + key;
      Optional<ControllerPlugin> controller = plugins.readyController(pluginId)
          .filter(p -> p.has(CsiCapabilities.EXPAND_VOLUME));
      Optional<NodePlugin> node = plugins.readyNode(pluginId).filter(n -> n.has(CsiCapabilities.EXPAND_VOLUME));
      if (controller.isEmpty() && node.isEmpty()) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.UNSUPPORTED,
            "plugin " + pluginId + " has no ready controller or node service offering EXPAND_VOLUME"));
      }
      VolumeRecord r = records.get(key);
      Optional<UsageRecord> usage = r == null ? Optional.empty()
          : r.usages().values().stream().filter(UsageRecord::hasPublished).findFirst();
      Optional<VolumeCapability> capability = usage.map(UsageRecord::capability);
      CompletableFuture<dev.csisupervisor.client.ControllerExpandResult> first = controller.isPresent()
          ? calls.call("ControllerExpandVolume", what, false,
              () -> controller.get().client().controllerExpandVolumeAsync(volumeId, range, capability, secrets))
          : CompletableFuture.completedFuture(new dev.csisupervisor.client.ControllerExpandResult(0, true));
      return first.thenCompose(result -> {
        if (!result.nodeExpansionRequired() || node.isEmpty() || usage.isEmpty()) {
          if (controller.isEmpty() && usage.isEmpty()) {
            return CompletableFuture.failedFuture(new VolumeException(Reason.NOT_MOUNTED, "volume " + key
                + " is not mounted on this node, and the plugin has no controller to expand it offline"));
          }
          return CompletableFuture.completedFuture(result.capacityBytes());
        }
        UsageRecord u = usage.get();
        String alloc = u.allocs().entrySet().stream().filter(a -> a.getValue() == AllocPhase.PUBLISHED)
            .findFirst().orElseThrow().getKey();
        Optional<Path> staging = u.stage() == StageState.NOT_STAGED ? Optional.empty() : Optional.of(r.stagingPath(u.usage()));
        return calls.call("NodeExpandVolume", what, false, () -> node.get().client().nodeExpandVolumeAsync(
            new NodeExpandRequest(volumeId, r.targetPath(alloc, u.usage()), range, staging, capability, secrets)))
            .thenApply(bytes -> bytes != 0 ? bytes : result.capacityBytes());
      });
    });
  }

  @Override
  public CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets) {
    VolumeIds.checkPlugin(pluginId);
    CreateVolumeRequest request = new CreateVolumeRequest(VolumeIds.check("name", name), capacity, capabilities,
        parameters, secrets);
    ControllerPlugin controller;
    try {
      controller = controllerFor(pluginId, CsiCapabilities.CREATE_DELETE_VOLUME);
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    // Serialized by name: the volume id is not known before the answer.
    return lanes.submit(new VolumeKey(pluginId, "\0create/" + name), () -> calls.call("CreateVolume",
        "creation of " + name, false, () -> controller.client().createVolumeAsync(request)));
  }

  @Override
  public CompletableFuture<Void> delete(String pluginId, String volumeId, Secrets secrets) {
    VolumeKey key = new VolumeKey(VolumeIds.checkPlugin(pluginId), VolumeIds.check("volumeId", volumeId));
    java.util.Objects.requireNonNull(secrets, "secrets");
    return lanes.submit(key, () -> {
      VolumeRecord r = records.get(key);
      if (r != null) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.IN_USE, "volume " + key
            + " is in use on this node (allocs " + r.allocs() + "); unmount it first"));
      }
      ControllerPlugin controller;
      try {
        controller = controllerFor(pluginId, CsiCapabilities.CREATE_DELETE_VOLUME);
      } catch (VolumeException e) {
        return CompletableFuture.failedFuture(e);
      }
      return calls.call("DeleteVolume", "deletion of " + key, false,
          () -> controller.client().deleteVolumeAsync(volumeId, secrets));
    });
  }

  private ControllerPlugin controllerFor(String pluginId, String capability) throws VolumeException {
    Optional<ControllerPlugin> c = plugins.readyController(pluginId);
    if (c.isEmpty()) {
      throw new VolumeException(Reason.PLUGIN_UNAVAILABLE, "controller plugin " + pluginId
          + (plugins.registeredController(pluginId).isPresent() ? " is not ready" : " is not registered"));
    }
    if (!c.get().has(capability)) {
      throw new VolumeException(Reason.UNSUPPORTED, "controller plugin " + pluginId + " does not offer " + capability);
    }
    return c.get();
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
    Map<String, String> out = new TreeMap<>();
    abnormal.forEach((k, v) -> out.put(k.toString(), v));
    return out;
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
    Listener l = new Listener(java.util.Objects.requireNonNull(listener, "listener"),
        java.util.Objects.requireNonNull(executor, "executor"));
    listeners.add(l);
    return () -> listeners.remove(l);
  }

  private void emit(VolumeEvent.Kind kind, VolumeKey key, String allocId, String message) {
    VolumeEvent event = new VolumeEvent(kind, key.pluginId(), key.volumeId(), allocId, message, clock.instant());
    for (Listener l : listeners) {
      try {
        l.executor().execute(() -> {
          try {
            l.listener().onEvent(event);
          } catch (RuntimeException e) {
            log.warn("a volume listener threw on {}", event, e);
          }
        });
      } catch (RejectedExecutionException e) {
        log.debug("volume listener's executor refused {}", event);
      }
    }
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    if (healthTask != null) {
      healthTask.cancel(false);
    }
    List<CompletableFuture<Void>> waiting = new ArrayList<>();
    synchronized (lock) {
      retryTimers.values().forEach(t -> t.cancel(false));
      retryTimers.clear();
      unmountWaiters.values().forEach(m -> m.values().forEach(waiting::addAll));
      unmountWaiters.clear();
    }
    waiting.forEach(w -> w.completeExceptionally(closedError()));
    plugins.close();
    committer.close();
  }

  private static VolumeException closedError() {
    return new VolumeException(Reason.CLOSED, "volume manager is closed; pending operations stay recorded for the next start");
  }

  private static Throwable unwrap(Throwable t) {
    while ((t instanceof java.util.concurrent.CompletionException || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
