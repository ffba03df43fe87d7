package dev.csisupervisor.registry;

import dev.csisupervisor.registry.Batch.PendingEvent;
import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.CommitLane;
import dev.csisupervisor.state.CommitLane.Prepared;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link PluginRegistry} implementation.
 *
 * <p><b>Group commit</b> (the node's {@link GroupCommitStore}, this registry's {@link CommitLane}). Every
 * write is a {@link WriteRequest} submitted to the lane; the committing thread calls {@link #prepare} with EVERY
 * request of the registry queued at that moment: it computes their effects one after another against memory plus
 * the effects of the earlier requests in the same batch; their store changes go into the node's next commit (ONE
 * journal write and fsync, shared with whatever else the node commits, outside every lock of ours), and only when
 * it succeeded does {@link Prepared#committed} (under {@code stateLock}) change memory, number the events and queue
 * them for subscribers. Batches are strictly one after another, so commit order, memory order and event sequence
 * order are the same; a failed commit fails every request of its batch and leaves memory untouched, and the next
 * batch is computed from that memory.
 *
 * <p><b>Locks.</b> The group commit's lock guards its queue only (never held across I/O); {@code stateLock} guards
 * memory for short updates, reads and subscribe. Memory and {@code nextOrder} are changed only by the committing
 * thread (one at a time), with {@code stateLock} held for memory. Listener code runs on the subscribers' executors
 * after both are released (with a direct executor: on a writer's thread, after its commit).
 *
 * <p><b>Parts.</b> {@link RestoredRegistrations} decodes the store's records once, in the constructor; every write is a
 * {@link WriteRequest} that computes its effects into the committer's {@link Batch}; {@link EventStreams} numbers
 * the events per type and queues them for the subscribers, each a {@link Subscriber} with a bounded queue.
 */
final class DefaultPluginRegistry implements PluginRegistry {
  private static final Logger log = LoggerFactory.getLogger(DefaultPluginRegistry.class);

  private enum State { RUNNING, CLOSED }

  private final AtomicReference<State> state = new AtomicReference<>(State.RUNNING);
  private final StateStore store;
  private final boolean closeStore;
  private final Clock clock;
  private final Map<PluginType, PluginDispenser<?>> dispensers;
  private final List<RestoreProblem> restoreProblems;

  private final GroupCommitStore committer;
  private final boolean ownCommitter; // made here in front of a plain store: stopped at close
  private final CommitLane<WriteRequest<?>> lane;

  private long nextOrder; // only the committing thread reads or writes it (one at a time, handed over by the lane)

  private final Object stateLock = new Object();
  private final Map<PluginKey, Registration> entries; // guarded by stateLock; written only by the committer
  private final Set<String> skippedKeys; // guarded by stateLock; written only by the committer
  private final EventStreams streams; // guarded by stateLock (the committer reads the last sequences without it)

  private final ScheduledExecutorService graceScheduler;
  private final Duration gracePeriod;
  private ScheduledFuture<?> graceTask; // guarded by stateLock

  DefaultPluginRegistry(PluginRegistry.Builder b) {
    this.store = b.stateStore;
    this.closeStore = b.closeStateStore;
    this.committer = GroupCommitStore.sharing(store);
    this.ownCommitter = committer != store;
    this.lane = committer.lane("plugin registry", this::prepare);
    this.clock = b.clock;
    this.dispensers = new EnumMap<>(PluginType.class);
    this.dispensers.putAll(b.dispensers);
    this.gracePeriod = b.restoreGracePeriod;
    this.graceScheduler = b.graceScheduler;
    RestoredRegistrations restored = RestoredRegistrations.of(store.loadAll(), store);
    this.entries = restored.entries;
    this.skippedKeys = restored.skippedKeys;
    this.streams = new EventStreams(restored.sequences, b.maxSubscriberBacklog, b.closeTimeout);
    this.nextOrder = restored.nextOrder;
    this.restoreProblems = List.copyOf(restored.problems);
    if (gracePeriod != null && entries.values().stream().anyMatch(e -> e.info().restored())) {
      scheduleGraceExpiry();
    }
  }

  // ---- restore grace period ----

  private void scheduleGraceExpiry() {
    synchronized (stateLock) {
      if (state.get() == State.CLOSED) {
        return;
      }
      graceTask = graceScheduler.schedule(this::expireUnconfirmed, gracePeriod.toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  private void expireUnconfirmed() {
    if (state.get() == State.CLOSED) {
      return;
    }
    try {
      List<PluginEvent> events = submit(new WriteRequest.DropRestored(null));
      if (!events.isEmpty()) {
        log.info("restore grace period {} over: deregistered {} unconfirmed plugin(s)", gracePeriod, events.size());
      }
    } catch (IllegalStateException closed) {
      // closed meanwhile
    } catch (RuntimeException e) {
      log.error("restore grace period {} over, but deregistering unconfirmed plugins failed; retrying after another"
          + " grace period", gracePeriod, e);
      scheduleGraceExpiry();
    }
  }

  // ---- writes ----

  @Override
  public Optional<PluginEvent> register(PluginInfo info) {
    Checks.notNull(info, "info");
    return submit(new WriteRequest.Register(info.withRestored(false)));
  }

  @Override
  public Optional<PluginEvent> deregister(PluginType type, String name, String allocId) {
    return submit(new WriteRequest.Deregister(new PluginKey(type, name, allocId)));
  }

  @Override
  public List<PluginEvent> reconcile(Set<String> liveAllocIds) {
    Checks.notNull(liveAllocIds, "liveAllocIds");
    Set<String> live = new HashSet<>();
    for (String id : liveAllocIds) {
      live.add(Checks.notNull(id, "liveAllocIds element"));
    }
    return submit(new WriteRequest.DropRestored(live));
  }

  private <R> R submit(WriteRequest<R> request) {
    ensureRunning();
    lane.submit(request);
    return request.get();
  }

  /**
   * Computes one batch on the committing thread (the only one at a time): the store changes of every request, and
   * what to do once the node's commit is known (sets each request's outcome; after a success, memory and events,
   * and the drain of the subscribers that got events, which the writers run outside the locks).
   */
  private Prepared prepare(List<WriteRequest<?>> batch) {
    if (state.get() == State.CLOSED) {
      batch.forEach(r -> r.fail(new IllegalStateException("plugin registry is closed")));
      return new Prepared() {
        @Override
        public List<StateChange> changes() {
          return List.of();
        }

        @Override
        public Runnable committed() {
          return () -> { };
        }

        @Override
        public void failed(Throwable failure) {
        }
      };
    }

    Batch work = new Batch(entries, skippedKeys, nextOrder);
    List<WriteRequest<?>> included = new ArrayList<>(batch.size());
    for (WriteRequest<?> r : batch) {
      try {
        r.compute(work);
        included.add(r);
      } catch (RuntimeException e) {
        r.fail(e); // compute does all its throwing work before touching the batch
      }
    }

    // The new last sequence of every type that gets events, in the same commit (numbering survives a restart).
    Map<PluginType, Long> lastSequence = new EnumMap<>(PluginType.class);
    for (PendingEvent pe : work.events) {
      lastSequence.merge(pe.info.type(), 1L, Long::sum);
    }
    lastSequence.forEach((type, count) -> work.changes.add(
        new StateChange.Put(SequenceRecord.key(type), SequenceRecord.encode(streams.lastSequence(type) + count))));

    return new Prepared() {
      @Override
      public List<StateChange> changes() {
        return work.changes;
      }

      @Override
      public Runnable committed() {
        return applyCommitted(work, included);
      }

      @Override
      public void failed(Throwable e) {
        // The group commit logged it, once for everything in the batch.
        Throwable failure = e instanceof StateStoreException || e instanceof Error ? e
            : new StateStoreException("commit of " + work.changes.size() + " registry change(s) failed: " + e, e);
        included.forEach(r -> r.fail(failure));
      }
    };
  }

  /** After the commit: memory, events, outcomes; returns the drain to run outside the locks. */
  private Runnable applyCommitted(Batch work, List<WriteRequest<?>> included) {
    Set<Subscriber> touched = new LinkedHashSet<>();
    synchronized (stateLock) {
      work.overlay.forEach((key, entry) -> {
        if (entry.isPresent()) {
          entries.put(key, entry.get());
        } else {
          entries.remove(key);
        }
      });
      skippedKeys.removeAll(work.droppedSkippedKeys);
      skippedKeys.removeAll(work.overwrittenSkippedKeys);
      nextOrder = work.nextOrder;
      Instant now = clock.instant();
      for (PendingEvent pe : work.events) {
        pe.event = streams.publish(pe.kind, pe.info, now, touched);
      }
    }
    for (String key : work.droppedSkippedKeys) {
      log.warn("dropped skipped state record {}: its allocation is not alive", key);
    }
    included.forEach(WriteRequest::succeed);
    // A direct executor runs listener code right here: the writers run this after their wait, outside every lock.
    return () -> touched.forEach(Subscriber::scheduleDrain);
  }

  // ---- reads ----

  @Override
  public List<PluginInfo> list(PluginType type) {
    Checks.type(type);
    synchronized (stateLock) {
      Map<String, Registration> newest = new TreeMap<>();
      for (Registration e : entries.values()) {
        if (e.info().type() == type) {
          newest.merge(e.info().name(), e, (a, b) -> Registration.BY_ORDER.compare(a, b) >= 0 ? a : b);
        }
      }
      return newest.values().stream().map(Registration::info).toList();
    }
  }

  @Override
  public List<PluginInfo> listAll(PluginType type) {
    Checks.type(type);
    synchronized (stateLock) {
      return listAllLocked(type);
    }
  }

  private List<PluginInfo> listAllLocked(PluginType type) {
    return entries.values().stream()
        .filter(e -> e.info().type() == type)
        .sorted(Registration.BY_ORDER)
        .map(Registration::info)
        .toList();
  }

  @Override
  public Optional<PluginInfo> find(PluginType type, String name) {
    Checks.type(type);
    Checks.pluginName(name);
    synchronized (stateLock) {
      return entries.values().stream()
          .filter(e -> e.info().type() == type && e.info().name().equals(name))
          .max(Registration.BY_ORDER)
          .map(Registration::info);
    }
  }

  @Override
  public Optional<PluginInfo> pluginForAlloc(PluginType type, String name, String allocId) {
    PluginKey key = new PluginKey(type, name, allocId);
    synchronized (stateLock) {
      return Optional.ofNullable(entries.get(key)).map(Registration::info);
    }
  }

  @Override
  public List<RestoreProblem> restoreProblems() {
    return restoreProblems;
  }

  // ---- dispense ----

  @Override
  public Object dispense(PluginType type, String name) throws PluginNotFoundException {
    ensureRunning();
    PluginDispenser<?> dispenser = dispensers.get(Checks.type(type));
    PluginInfo plugin = find(type, name).orElseThrow(() -> new PluginNotFoundException(type, name));
    if (dispenser == null) {
      throw new IllegalStateException("no dispenser is configured for plugin type " + type.id());
    }
    Object client;
    try {
      client = dispenser.dispense(plugin);
    } catch (Exception e) {
      throw new PluginDispenseException(plugin, e.toString(), e);
    }
    if (client == null) {
      throw new PluginDispenseException(plugin, "the " + type.id() + " dispenser returned null", null);
    }
    return client;
  }

  @Override
  public <T> T dispense(PluginType type, String name, Class<T> clientType) throws PluginNotFoundException {
    Checks.notNull(clientType, "clientType");
    Object client = dispense(type, name);
    if (!clientType.isInstance(client)) {
      throw new IllegalStateException("the " + type.id() + " dispenser returned a " + client.getClass().getName()
          + ", not a " + clientType.getName());
    }
    return clientType.cast(client);
  }

  // ---- subscribe ----

  @Override
  public Subscription subscribe(PluginType type, PluginListener listener, Executor executor) {
    Checks.type(type);
    Checks.notNull(listener, "listener");
    Checks.notNull(executor, "executor");
    synchronized (stateLock) {
      ensureRunning();
      return streams.add(type, listener, executor, listAllLocked(type), this::unsubscribe);
    }
  }

  private void unsubscribe(Subscriber s) {
    synchronized (stateLock) {
      streams.remove(s);
    }
  }

  // ---- lifecycle ----

  private void ensureRunning() {
    if (state.get() == State.CLOSED) {
      throw new IllegalStateException("plugin registry is closed");
    }
  }

  @Override
  public void close() {
    if (!state.compareAndSet(State.RUNNING, State.CLOSED)) {
      return;
    }
    // A commit in flight finishes (its callers get their results); whoever is still queued is failed by prepare.
    if (ownCommitter) {
      committer.stop();
    }
    List<Subscriber> all;
    synchronized (stateLock) {
      if (graceTask != null) {
        graceTask.cancel(false);
      }
      all = streams.endAll();
    }
    for (Subscriber s : all) {
      s.awaitDeliveryInFlight();
    }
    for (Subscriber s : all) {
      s.scheduleDrain(); // delivers onClosed on the subscriber's executor
    }
    if (closeStore) {
      store.close();
    }
    log.debug("plugin registry closed");
  }

  @Override
  public String toString() {
    return "PluginRegistry[" + store + ", " + state.get() + "]";
  }
}
