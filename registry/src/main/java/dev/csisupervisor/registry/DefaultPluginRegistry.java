package dev.csisupervisor.registry;

import dev.csisupervisor.registry.PluginEvent.Kind;
import dev.csisupervisor.registry.PluginRecordCodec.RecordFormatException;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
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
 * <p><b>Group commit</b> ({@link GroupCommit}). Every write is a {@link Request} submitted to the group commit;
 * the writer that becomes the committer calls {@link #commitBatch} with EVERY queued request: it computes their
 * effects one after another against memory plus the effects of the earlier requests in the same batch, commits
 * all their store changes in ONE {@link StateStore#apply} (outside every lock), and only then (under
 * {@code stateLock}) changes memory, numbers the events and queues them for subscribers. Batches are strictly
 * one after another, so commit order, memory order and event sequence order are the same; a failed commit
 * fails every request of its batch and leaves memory untouched, and the next batch is computed from that memory.
 *
 * <p><b>Locks.</b> The group commit's own lock guards its queue only (never held across I/O);
 * {@code stateLock} guards memory for short updates, reads and subscribe. Memory and
 * {@code nextOrder} are changed only by the committer (one at a time), with {@code stateLock} held for memory.
 * Listener code runs on the subscribers' executors after both are released (with a direct executor: on the
 * committing thread, after the commit).
 */
final class DefaultPluginRegistry implements PluginRegistry {
  private static final Logger log = LoggerFactory.getLogger(DefaultPluginRegistry.class);

  private enum State { RUNNING, CLOSED }

  /** A registration in memory with its persisted registration order ("newest" = highest order). */
  private record Entry(PluginInfo info, long order) {}

  private static final Comparator<Entry> BY_ORDER =
      Comparator.comparingLong(Entry::order).thenComparing(e -> e.info().key().storeKey());

  private final AtomicReference<State> state = new AtomicReference<>(State.RUNNING);
  private final StateStore store;
  private final boolean closeStore;
  private final Clock clock;
  private final int maxBacklog;
  private final Duration closeTimeout;
  private final Map<PluginType, PluginDispenser<?>> dispensers;
  private final List<RestoreProblem> restoreProblems;

  private final GroupCommit<Request<?>> groupCommit = new GroupCommit<>(this::commitBatch);

  private long nextOrder; // only the committer reads or writes it (handed over through the group commit's lock)

  private final Object stateLock = new Object();
  private final Map<PluginKey, Entry> entries; // guarded by stateLock; written only by the committer
  private final Set<String> skippedKeys = new LinkedHashSet<>(); // guarded by stateLock; written only by the committer
  private final Map<PluginType, Long> sequences = new EnumMap<>(PluginType.class); // guarded by stateLock
  private final Map<PluginType, List<Subscriber>> subscribers = new EnumMap<>(PluginType.class); // guarded by stateLock

  private final ScheduledExecutorService graceScheduler;
  private final Duration gracePeriod;
  private ScheduledFuture<?> graceTask; // guarded by stateLock

  DefaultPluginRegistry(PluginRegistry.Builder b) {
    this.store = b.stateStore;
    this.closeStore = b.closeStateStore;
    this.clock = b.clock;
    this.maxBacklog = b.maxSubscriberBacklog;
    this.closeTimeout = b.closeTimeout;
    this.dispensers = new EnumMap<>(PluginType.class);
    this.dispensers.putAll(b.dispensers);
    this.gracePeriod = b.restoreGracePeriod;
    this.graceScheduler = b.graceScheduler;
    for (PluginType t : PluginType.values()) {
      sequences.put(t, 0L);
      subscribers.put(t, new ArrayList<>());
    }
    Map<String, byte[]> records = store.loadAll();
    this.entries = new HashMap<>(Math.max(16, (int) (records.size() / 0.75f) + 1));
    this.restoreProblems = List.copyOf(restore(records));
    if (gracePeriod != null && entries.values().stream().anyMatch(e -> e.info().restored())) {
      scheduleGraceExpiry();
    }
  }

  // ---- restore ----

  /** Below this many records a restore decodes on the calling thread only. */
  private static final int PARALLEL_RESTORE_MIN = 4096;

  private List<RestoreProblem> restore(Map<String, byte[]> records) {
    List<RestoreProblem> problems = new ArrayList<>();
    long maxOrder = 0;
    // Decode in slices, in parallel for a large state (each slice with its own interner), then index in order.
    List<Map.Entry<String, byte[]>> all = List.copyOf(records.entrySet());
    Object[] decoded = new Object[all.size()]; // a Decoded, or the RecordFormatException, or null: not a plugin
    int slices = all.size() < PARALLEL_RESTORE_MIN ? 1 : Math.min(4, Runtime.getRuntime().availableProcessors());
    java.util.stream.IntStream range = java.util.stream.IntStream.range(0, slices);
    (slices > 1 ? range.parallel() : range).forEach(slice -> {
      Interner interner = new Interner();
      for (int i = slice * all.size() / slices, to = (slice + 1) * all.size() / slices; i < to; i++) {
        String key = all.get(i).getKey();
        if (key.startsWith(PluginKey.STORE_PREFIX)) {
          try {
            decoded[i] = PluginRecordCodec.decodeRestored(key, all.get(i).getValue(), interner);
          } catch (RecordFormatException e) {
            decoded[i] = e;
          }
        }
      }
    });
    for (int i = 0; i < all.size(); i++) {
      String key = all.get(i).getKey();
      try {
        if (decoded[i] instanceof PluginRecordCodec.Decoded d) {
          entries.put(d.info().key(), new Entry(d.info(), d.registrationOrder()));
          maxOrder = Math.max(maxOrder, d.registrationOrder());
        } else if (decoded[i] instanceof RecordFormatException e) {
          throw e;
        } else if (key.startsWith(SequenceRecord.PREFIX)) {
          Optional<PluginType> type = SequenceRecord.typeOf(key);
          if (type.isEmpty()) {
            throw new RecordFormatException("not a plugin type this agent knows");
          }
          sequences.merge(type.get(), SequenceRecord.decode(all.get(i).getValue()), Math::max);
        } else {
          log.debug("ignoring state record {}: not a plugin registration", key);
        }
      } catch (RecordFormatException e) {
        // Skipped, not deleted: it may be a newer agent's record (survives a downgrade) or evidence for an
        // operator. reconcile() drops it once its allocation is known dead.
        problems.add(new RestoreProblem(key, e.getMessage()));
        if (key.startsWith(PluginKey.STORE_PREFIX)) {
          skippedKeys.add(key);
        }
      }
    }
    nextOrder = maxOrder + 1;
    // Sorted only for the log and the problem list (stable output); the records were decoded once, unsorted.
    problems.sort(Comparator.comparing(RestoreProblem::key));
    for (RestoreProblem p : problems) {
      log.error("STATE RECORD SKIPPED: {} cannot be restored ({}); it stays in the state store untouched and is"
          + " not registered", p.key(), p.reason());
    }
    if (!entries.isEmpty() || !problems.isEmpty()) {
      log.info("restored {} plugin registration(s) from {} ({} skipped; event sequences go on from {})",
          entries.size(), store, problems.size(), sequences);
    }
    return problems;
  }

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
      List<PluginEvent> events = submit(new DropRestored(null));
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
    return submit(new Register(info.withRestored(false)));
  }

  @Override
  public Optional<PluginEvent> deregister(PluginType type, String name, String allocId) {
    return submit(new Deregister(new PluginKey(type, name, allocId)));
  }

  @Override
  public List<PluginEvent> reconcile(Set<String> liveAllocIds) {
    Checks.notNull(liveAllocIds, "liveAllocIds");
    Set<String> live = new HashSet<>();
    for (String id : liveAllocIds) {
      live.add(Checks.notNull(id, "liveAllocIds element"));
    }
    return submit(new DropRestored(live));
  }

  private <R> R submit(Request<R> request) {
    ensureRunning();
    groupCommit.submit(request);
    return request.get();
  }

  /**
   * Commits one batch; the caller is the only committer. Sets each request's outcome (the group commit then
   * marks them done). Returns the drain of the subscribers that got events, to run outside the locks.
   */
  private Runnable commitBatch(List<Request<?>> batch) {
    if (state.get() == State.CLOSED) {
      batch.forEach(r -> r.fail(new IllegalStateException("plugin registry is closed")));
      return () -> { };
    }

    Batch work = new Batch(nextOrder);
    List<Request<?>> included = new ArrayList<>(batch.size());
    for (Request<?> r : batch) {
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
        new StateChange.Put(SequenceRecord.key(type), SequenceRecord.encode(sequences.get(type) + count))));

    try {
      store.apply(work.changes);
    } catch (RuntimeException | Error e) {
      Throwable failure = e instanceof StateStoreException || e instanceof Error ? e
          : new StateStoreException("commit of " + work.changes.size() + " registry change(s) failed: " + e, e);
      if (e instanceof StateStoreException) {
        // Expected when the disk is full: one line (the callers get the exception), no stack trace per retry.
        log.warn("commit of {} registry change(s) failed; nothing changed: {}", work.changes.size(), e.getMessage());
      } else {
        log.error("commit of {} registry change(s) failed; nothing changed", work.changes.size(), e);
      }
      included.forEach(r -> r.fail(failure));
      return () -> { };
    }

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
        long seq = sequences.merge(pe.info.type(), 1L, Long::sum);
        pe.event = new PluginEvent(seq, pe.info.type(), pe.kind, pe.info, now);
        List<Subscriber> subs = subscribers.get(pe.info.type());
        subs.removeIf(s -> {
          touched.add(s);
          return !s.offer(pe.event); // lagged now: drop it from the list, the drain tells its listener
        });
      }
    }
    for (String key : work.droppedSkippedKeys) {
      log.warn("dropped skipped state record {}: its allocation is not alive", key);
    }
    included.forEach(Request::succeed);
    // A direct executor runs listener code right here, so the group commit runs this outside its lock.
    return () -> touched.forEach(Subscriber::scheduleDrain);
  }

  /** The effects of one batch, computed before the commit and applied to memory only after it succeeded. */
  private final class Batch {
    final Map<PluginKey, Optional<Entry>> overlay = new LinkedHashMap<>();
    final List<StateChange> changes = new ArrayList<>();
    final List<PendingEvent> events = new ArrayList<>();
    final Set<String> droppedSkippedKeys = new LinkedHashSet<>();
    /** Skipped records that a registration of the same key overwrites: no longer skipped. */
    final Set<String> overwrittenSkippedKeys = new HashSet<>();
    long nextOrder;

    Batch(long nextOrder) {
      this.nextOrder = nextOrder;
    }

    /** The entry as it will be after the earlier requests of this batch. */
    Entry lookup(PluginKey key) {
      Optional<Entry> o = overlay.get(key);
      if (o != null) {
        return o.orElse(null);
      }
      return entries.get(key); // safe without stateLock: only the committer changes it
    }

    /** Every entry as it will be after the earlier requests of this batch, oldest registration first. */
    List<Entry> current() {
      Map<PluginKey, Entry> view = new HashMap<>(entries);
      overlay.forEach((k, e) -> {
        if (e.isPresent()) {
          view.put(k, e.get());
        } else {
          view.remove(k);
        }
      });
      List<Entry> list = new ArrayList<>(view.values());
      list.sort(BY_ORDER);
      return list;
    }

    PendingEvent put(Entry entry, byte[] record, Kind kind) {
      PluginKey key = entry.info().key();
      overlay.put(key, Optional.of(entry));
      changes.add(new StateChange.Put(key.storeKey(), record));
      if (skippedKeys.contains(key.storeKey())) {
        overwrittenSkippedKeys.add(key.storeKey());
      }
      return event(kind, entry.info());
    }

    PendingEvent remove(Entry entry) {
      PluginKey key = entry.info().key();
      overlay.put(key, Optional.empty());
      changes.add(new StateChange.Delete(key.storeKey()));
      return event(Kind.DEREGISTERED, entry.info());
    }

    /**
     * Confirming a restored entry: its record is unchanged (restored is not stored), but
     * subscribers hold it as restored, so they get an UPDATED event with restored=false (whose
     * sequence is committed like every event's).
     */
    PendingEvent confirm(Entry entry) {
      overlay.put(entry.info().key(), Optional.of(entry));
      return event(Kind.UPDATED, entry.info());
    }

    private PendingEvent event(Kind kind, PluginInfo info) {
      PendingEvent pe = new PendingEvent(kind, info);
      events.add(pe);
      return pe;
    }
  }

  private static final class PendingEvent {
    final Kind kind;
    final PluginInfo info;
    PluginEvent event; // set when the batch is applied

    PendingEvent(Kind kind, PluginInfo info) {
      this.kind = kind;
      this.info = info;
    }
  }

  /** One caller's write: its effects on a batch, then its outcome ({@link GroupCommit.Request}). */
  private abstract static class Request<R> extends GroupCommit.Request<R> {
    /** Adds this request's effects to the batch; must throw before touching it, if at all. */
    abstract void compute(Batch batch);
  }

  /** A request that changes at most one entry and answers with its event, if there was one. */
  private abstract class EventRequest extends Request<Optional<PluginEvent>> {
    PendingEvent event;

    @Override
    final Optional<PluginEvent> result() {
      return event == null ? Optional.empty() : Optional.of(event.event);
    }
  }

  private final class Register extends EventRequest {
    private final PluginInfo info;

    Register(PluginInfo info) {
      this.info = info;
    }

    @Override
    void compute(Batch batch) {
      Entry current = batch.lookup(info.key());
      if (current == null) {
        Entry entry = new Entry(info, batch.nextOrder);
        byte[] record = PluginRecordCodec.encode(entry.info(), entry.order());
        batch.nextOrder++;
        event = batch.put(entry, record, Kind.REGISTERED);
      } else if (current.info().sameContentAs(info)) {
        if (current.info().restored()) {
          event = batch.confirm(new Entry(current.info().withRestored(false), current.order()));
        }
      } else {
        // Health "since" is the time of the last health transition: keep it when flag and message are unchanged.
        PluginInfo next = current.info().health().sameStateAs(info.health()) ? info.withHealth(current.info().health()) : info;
        Entry entry = new Entry(next, current.order());
        byte[] record = PluginRecordCodec.encode(entry.info(), entry.order());
        event = batch.put(entry, record, Kind.UPDATED);
      }
    }
  }

  private final class Deregister extends EventRequest {
    private final PluginKey key;

    Deregister(PluginKey key) {
      this.key = key;
    }

    @Override
    void compute(Batch batch) {
      Entry current = batch.lookup(key);
      if (current != null) {
        event = batch.remove(current);
      }
    }
  }

  /** Reconcile ({@code live} given) or grace expiry ({@code live == null}: every unconfirmed entry goes). */
  private final class DropRestored extends Request<List<PluginEvent>> {
    private final Set<String> live;
    private final List<PendingEvent> events = new ArrayList<>();

    DropRestored(Set<String> live) {
      this.live = live;
    }

    @Override
    void compute(Batch batch) {
      List<Entry> drop = new ArrayList<>();
      for (Entry e : batch.current()) {
        if (e.info().restored() && (live == null || !live.contains(e.info().allocId()))) {
          drop.add(e);
        }
      }
      List<String> skippedToDrop = new ArrayList<>();
      if (live != null) {
        for (String key : skippedKeys) {
          if (batch.droppedSkippedKeys.contains(key) || batch.overwrittenSkippedKeys.contains(key)) {
            continue;
          }
          try {
            if (!live.contains(PluginKey.fromStoreKey(key).allocId())) {
              skippedToDrop.add(key);
            }
          } catch (IllegalArgumentException unparseable) {
            // A key we cannot attribute to an allocation is never dropped automatically.
          }
        }
      }
      for (Entry e : drop) {
        events.add(batch.remove(e));
      }
      for (String key : skippedToDrop) {
        batch.changes.add(new StateChange.Delete(key));
        batch.droppedSkippedKeys.add(key);
      }
    }

    @Override
    List<PluginEvent> result() {
      return events.stream().map(pe -> pe.event).toList();
    }
  }

  // ---- reads ----

  @Override
  public List<PluginInfo> list(PluginType type) {
    Checks.type(type);
    synchronized (stateLock) {
      Map<String, Entry> newest = new TreeMap<>();
      for (Entry e : entries.values()) {
        if (e.info().type() == type) {
          newest.merge(e.info().name(), e, (a, b) -> BY_ORDER.compare(a, b) >= 0 ? a : b);
        }
      }
      return newest.values().stream().map(Entry::info).toList();
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
        .sorted(BY_ORDER)
        .map(Entry::info)
        .toList();
  }

  @Override
  public Optional<PluginInfo> find(PluginType type, String name) {
    Checks.type(type);
    Checks.pluginName(name);
    synchronized (stateLock) {
      return entries.values().stream()
          .filter(e -> e.info().type() == type && e.info().name().equals(name))
          .max(BY_ORDER)
          .map(Entry::info);
    }
  }

  @Override
  public Optional<PluginInfo> pluginForAlloc(PluginType type, String name, String allocId) {
    PluginKey key = new PluginKey(type, name, allocId);
    synchronized (stateLock) {
      return Optional.ofNullable(entries.get(key)).map(Entry::info);
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
      Subscriber s = new Subscriber(type, listener, executor, maxBacklog, listAllLocked(type), sequences.get(type),
          closeTimeout, this::unsubscribe);
      subscribers.get(type).add(s);
      return s;
    }
  }

  private void unsubscribe(Subscriber s) {
    synchronized (stateLock) {
      subscribers.get(s.type()).remove(s);
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
    // Let a commit in flight finish (its callers get their results), then fail whoever is still queued.
    groupCommit.failQueued(new IllegalStateException("plugin registry is closed"));
    List<Subscriber> all = new ArrayList<>();
    synchronized (stateLock) {
      if (graceTask != null) {
        graceTask.cancel(false);
      }
      for (List<Subscriber> subs : subscribers.values()) {
        for (Subscriber s : subs) {
          s.end();
          all.add(s);
        }
        subs.clear();
      }
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
