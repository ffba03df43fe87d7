package dev.csisupervisor.state;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node's one group commit: every change waiting at the moment a commit starts, from any module, goes into ONE
 * {@link StateStore#apply} of the store below (one journal write, one {@code fdatasync}), and each caller hears of
 * its change only after that. So the registry and the volume manager share their fsyncs, and sixteen writers cost
 * a few commits, not sixteen.
 *
 * <p><b>Fair.</b> Commits run one at a time; a commit takes the whole queue as it is when it starts, so a change
 * waits for at most the commit in flight and then is in the next one, always (the store's own lock alone lets a
 * writer miss several commits in a row).
 *
 * <p><b>Exactly the failed batch fails.</b> When the store's {@code apply} throws, every change of that batch fails
 * with its exception and nothing of it changed (the store's contract); the next batch is tried afresh. Changes are
 * checked when they are submitted (a blank or over-long key), so one caller's bad change never fails another's.
 *
 * <p><b>Three ways in.</b> {@link #put}, {@link #delete} and {@link #apply} wait for their commit (the calling thread
 * commits the batch itself when no commit is in flight, so a lone writer pays no thread hand-off).
 * {@link #applyAsync} returns at once; its future completes on the commit thread ({@code csi-state-commit}) once
 * the change is durable, so stages attached to it must not block. A {@link Lane} is for a module whose changes
 * are computed from memory that only a successful commit may change (the registry): its batch is prepared on the
 * committing thread right before the write, and told the outcome right after it, before the next batch is
 * prepared; so for that module commit order and memory order are one.
 *
 * <p>{@link #get} and {@link #loadAll} read the store below directly; {@code put} and {@code delete} are
 * {@link #apply} of one change. Thread-safe. {@link #close()} commits what is
 * queued, ends the commit thread and closes the store below; {@link #stop()} does the same but leaves the store
 * open (for a module that made this committer over a store it does not own).
 */
public final class GroupCommitStore implements StateStore {
  private static final Logger log = LoggerFactory.getLogger(GroupCommitStore.class);

  /**
   * What a {@link Lane}'s requests of one batch became: their changes, and what to do once the commit is known.
   * Both callbacks run on the committing thread before the next batch is prepared, and must not block.
   */
  public interface Prepared {
    /** The changes to commit (may be empty: the requests still hear the outcome of the batch they were in). */
    List<StateChange> changes();

    /**
     * The changes are durable. Returns what the lane's callers run once they have woken, outside every lock (the
     * first of them to wake runs it): the registry delivers its events there.
     */
    Runnable committed();

    /** The commit failed; nothing of the batch changed. */
    void failed(Throwable failure);
  }

  /**
   * A module's way in for changes computed against its memory ({@link #lane}). Requests of one lane go into a
   * batch in arrival order and are prepared together, by one call.
   *
   * @param <Q> the module's requests; their outcomes are the module's to record (in {@link Prepared})
   */
  public static final class Lane<Q> {
    private final GroupCommitStore committer;
    private final String name;
    private final Function<List<Q>, Prepared> prepare;

    private Lane(GroupCommitStore committer, String name, Function<List<Q>, Prepared> prepare) {
      this.committer = committer;
      this.name = name;
      this.prepare = prepare;
    }

    /**
     * Queues {@code request} and returns once its batch is committed (or failed) and the lane was told, having run
     * the batch's {@link Prepared#committed()} follow-up if no caller of the batch did yet. An interrupt does not
     * end the wait (once queued the request may be committed, and the caller must learn the outcome); it is
     * restored. When the store is stopped the lane is prepared and told the failure like a failed commit.
     */
    public void submit(Q request) {
      LaneEntry<Q> e = new LaneEntry<>(this, requireNonNull(request, "request"));
      committer.commitAndWait(e);
      if (e.failure instanceof RuntimeException r) {
        throw r; // the lane's own code threw (a bug): its requests may have no outcome
      }
      if (e.failure instanceof Error err) {
        throw err;
      }
      e.runAfterwards();
    }

    @Override
    public String toString() {
      return "Lane[" + name + "]";
    }
  }

  private abstract static class Entry {
    boolean done; // guarded by the committer's lock
    Throwable failure; // set by the committer before done
    /** Where its caller waits (null for an asynchronous change): signalled when done or handed the turn. */
    Condition wake; // guarded by the committer's lock
    boolean leads; // guarded by the committer's lock: handed the turn by the commit before, not done yet
  }

  private static final class Changes extends Entry {
    final List<StateChange> changes;
    final CompletableFuture<Void> future; // null: a caller waits

    Changes(List<StateChange> changes, CompletableFuture<Void> future) {
      this.changes = changes;
      this.future = future;
    }
  }

  private static final class LaneEntry<Q> extends Entry {
    final Lane<Q> lane;
    final Q request;
    Afterwards afterwards; // set by the committer before done

    LaneEntry(Lane<Q> lane, Q request) {
      this.lane = lane;
      this.request = request;
    }

    void runAfterwards() {
      if (afterwards != null) {
        afterwards.runOnce();
      }
    }
  }

  /** A lane batch's follow-up, run by the first of its callers to wake. */
  private static final class Afterwards {
    private final Runnable task;
    private final AtomicBoolean ran = new AtomicBoolean();

    Afterwards(Runnable task) {
      this.task = task;
    }

    void runOnce() {
      if (ran.compareAndSet(false, true)) {
        task.run();
      }
    }
  }

  private final StateStore store; // the store below
  private final ReentrantLock lock = new ReentrantLock();
  /** Signalled when no commit is in flight any more: for {@link #stop} and a stopped lane (callers with a change
   * wait on their own {@link Entry#wake}, so that a commit wakes its own callers and the next leader, not all). */
  private final Condition turn = lock.newCondition();
  /** The commit thread: asynchronous changes to commit, or futures to complete. */
  private final Condition work = lock.newCondition();
  private List<Entry> queue = new ArrayList<>(); // guarded by lock
  private int asyncQueued; // guarded by lock: asynchronous entries in queue
  private boolean committing; // guarded by lock
  private List<CompletableFuture<Void>> succeeded = new ArrayList<>(); // guarded by lock: for the commit thread
  private final List<Map.Entry<CompletableFuture<Void>, Throwable>> failed = new ArrayList<>(); // guarded by lock
  private Thread thread; // guarded by lock; started at the first asynchronous change
  private boolean stopped; // guarded by lock
  private long wakeups; // guarded by lock: how often callers waiting for their outcome or turn were woken
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong changes = new AtomicLong();

  private GroupCommitStore(StateStore store) {
    this.store = store;
  }

  /** A group commit in front of {@code store}; closing it closes {@code store}. */
  public static GroupCommitStore over(StateStore store) {
    if (store == null) {
      throw new IllegalArgumentException("store must not be null");
    }
    if (store instanceof GroupCommitStore) {
      throw new IllegalArgumentException("store is already a GroupCommitStore: " + store);
    }
    return new GroupCommitStore(store);
  }

  /**
   * The group commit to write {@code store} through: {@code store} itself when it is one (the agent makes one for
   * the node and hands it to every module), else a new one in front of it, which the caller must {@link #stop()}.
   */
  public static GroupCommitStore sharing(StateStore store) {
    if (store == null) {
      throw new IllegalArgumentException("store must not be null");
    }
    return store instanceof GroupCommitStore g ? g : new GroupCommitStore(store);
  }

  /**
   * A new way in for one module's computed changes; {@code prepare} is called on the committing thread with the
   * lane's requests of a batch, in arrival order (see {@link Lane}). A throwing {@code prepare} fails its requests
   * (through {@link Lane#submit} it throws to each caller) and leaves the rest of the batch alone.
   */
  public <Q> Lane<Q> lane(String name, Function<List<Q>, Prepared> prepare) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("name must not be null or blank");
    }
    return new Lane<>(this, name, requireNonNull(prepare, "prepare"));
  }

  // ---- writes ----

  @Override
  public void apply(List<StateChange> changes) {
    List<StateChange> checked = checked(changes);
    if (checked.isEmpty()) {
      return;
    }
    Changes e = new Changes(checked, null);
    commitAndWait(e);
    if (e.failure instanceof RuntimeException r) {
      throw r;
    }
    if (e.failure instanceof Error err) {
      throw err;
    }
    if (e.failure != null) {
      throw new StateStoreException("commit failed: " + e.failure, e.failure);
    }
  }

  /**
   * Commits {@code changes} in the next group, in one piece with the rest of it; returns at once. The future
   * completes on the commit thread once they are durable, or fails with the store's exception (then nothing of
   * the batch changed). An empty list completes at once.
   *
   * @throws IllegalArgumentException if the list, an element or a key is bad (nothing is queued)
   */
  public CompletableFuture<Void> applyAsync(List<StateChange> changes) {
    List<StateChange> checked = checked(changes);
    CompletableFuture<Void> future = new CompletableFuture<>();
    if (checked.isEmpty()) {
      future.complete(null);
      return future;
    }
    lock.lock();
    try {
      if (stopped) {
        future.completeExceptionally(new IllegalStateException("state store " + store + " is closed"));
        return future;
      }
      queue.add(new Changes(checked, future));
      asyncQueued++;
      if (thread == null) {
        thread = new Thread(this::runCommitThread, "csi-state-commit");
        thread.setDaemon(true);
        thread.start();
      }
      if (!committing) {
        work.signal();
      }
    } finally {
      lock.unlock();
    }
    return future;
  }

  private static List<StateChange> checked(List<StateChange> changes) {
    Keys.checkChanges(changes);
    for (StateChange c : changes) {
      Keys.checkLength(c.key());
    }
    return List.copyOf(changes);
  }

  /** How many commits (one {@code apply} of the store below each) were made. */
  public long commits() {
    return commits.get();
  }

  /** How many changes they held. */
  public long changes() {
    return changes.get();
  }

  /** How often callers waiting for their outcome or their turn were woken (for tests: once each is the aim). */
  long wakeups() {
    lock.lock();
    try {
      return wakeups;
    } finally {
      lock.unlock();
    }
  }

  /** How many entries wait behind the commit in flight (for tests). */
  int queued() {
    lock.lock();
    try {
      return queue.size();
    } finally {
      lock.unlock();
    }
  }

  // ---- the group commit ----

  /** Queues {@code e}, then waits until it is done: committed by another thread, or by this one. */
  private void commitAndWait(Entry e) {
    List<Entry> batch;
    Throwable refused = null;
    lock.lock();
    try {
      if (stopped) {
        refused = new IllegalStateException("state store " + store + " is closed");
        if (!(e instanceof LaneEntry<?>)) {
          e.failure = refused;
          return;
        }
        // A lane hears of it like of a failed commit (its requests get their outcome from the lane), prepared
        // in its turn like any batch: a lane's memory has one committer at a time.
        waitForTurn();
        batch = List.of(e);
      } else {
        queue.add(e);
        if (!awaitOutcomeOrTurn(e)) {
          return; // done by another thread's commit
        }
        batch = queue;
        queue = new ArrayList<>();
        asyncQueued = 0;
      }
    } finally {
      lock.unlock();
    }
    commitBatch(batch, refused);
  }

  /**
   * Under the lock, {@code e} queued: returns false once another thread's commit did it, or true, holding the turn
   * ({@code committing} set), when this thread is to commit: at once when no commit is in flight, else when the
   * commit in flight hands it the turn (its caller was the first waiting in the queue). Only this thread is woken
   * for it: waking every waiter at each commit (to find out which is next) sent all but one back to sleep, a
   * context switch each (benchmarks/README.md 15b: half the fsyncs since, the tail unchanged).
   */
  private boolean awaitOutcomeOrTurn(Entry e) {
    if (!committing) {
      committing = true;
      return true;
    }
    e.wake = lock.newCondition();
    int woken = awaitUninterruptibly(e.wake, () -> e.done || e.leads); // not "wakeups +=": it waits unlocked
    wakeups += woken;
    e.wake = null;
    return !e.done;
  }

  /** Under the lock: waits until no commit is in flight, then takes the turn. */
  private void waitForTurn() {
    awaitUninterruptibly(turn, () -> !committing);
    committing = true;
  }

  /**
   * Awaits {@code until} on {@code c}; an interrupt does not end the wait (it is restored). Returns how many times
   * the thread was woken.
   */
  private static int awaitUninterruptibly(Condition c, BooleanSupplier until) {
    boolean interrupted = false;
    int woken = 0;
    while (!until.getAsBoolean()) {
      try {
        c.await();
      } catch (InterruptedException ie) {
        interrupted = true;
      }
      woken++;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    return woken;
  }

  /**
   * Commits {@code batch} (this thread holds the turn): prepares each lane's requests, writes every change in one
   * {@code apply}, tells the lanes, marks the entries done and hands the futures to the commit thread.
   * {@code refused} (not null) fails the batch without a write: the store was stopped.
   */
  private void commitBatch(List<Entry> batch, Throwable refused) {
    Map<Lane<?>, List<LaneEntry<?>>> lanes = new LinkedHashMap<>();
    List<Changes> plain = new ArrayList<>();
    for (Entry e : batch) {
      if (e instanceof LaneEntry<?> le) {
        lanes.computeIfAbsent(le.lane, l -> new ArrayList<>()).add(le);
      } else {
        plain.add((Changes) e);
      }
    }
    Map<Lane<?>, Prepared> prepared = new LinkedHashMap<>();
    lanes.forEach((lane, entries) -> {
      try {
        prepared.put(lane, prepare(lane, entries));
      } catch (RuntimeException | Error ex) {
        log.error("preparing the {} change(s) of {} failed; they are not committed", entries.size(), lane, ex);
        entries.forEach(le -> le.failure = ex);
      }
    });
    // In arrival order; a lane's changes where its first request of the batch arrived.
    List<StateChange> all = new ArrayList<>();
    for (Entry e : batch) {
      if (e instanceof Changes c) {
        all.addAll(c.changes);
      } else if (e instanceof LaneEntry<?> le && lanes.get(le.lane).get(0) == le && prepared.containsKey(le.lane)) {
        all.addAll(prepared.get(le.lane).changes());
      }
    }

    Throwable failure = refused;
    if (failure == null && !all.isEmpty()) {
      try {
        store.apply(all);
        commits.incrementAndGet();
        changes.addAndGet(all.size());
      } catch (StateStoreException ex) {
        // Expected when the disk is full: one line (the callers get the exception), no stack trace per retry.
        log.warn("commit of {} change(s) failed; nothing of it changed: {}", all.size(), ex.getMessage());
        failure = ex;
      } catch (RuntimeException | Error ex) {
        log.error("commit of {} change(s) failed; nothing of it changed", all.size(), ex);
        failure = ex;
      }
    }

    Throwable outcome = failure;
    prepared.forEach((lane, p) -> tell(lane, p, lanes.get(lane), outcome));
    plain.forEach(c -> c.failure = outcome);
    finish(batch);
  }

  @SuppressWarnings("unchecked")
  private static <Q> Prepared prepare(Lane<Q> lane, List<LaneEntry<?>> entries) {
    List<Q> requests = new ArrayList<>(entries.size());
    entries.forEach(le -> requests.add((Q) le.request));
    return requireNonNull(lane.prepare.apply(requests), () -> lane + " prepared null");
  }

  private static void tell(Lane<?> lane, Prepared p, List<LaneEntry<?>> entries, Throwable failure) {
    try {
      if (failure == null) {
        Afterwards afterwards = new Afterwards(requireNonNull(p.committed(), () -> lane + " returned no follow-up"));
        entries.forEach(le -> le.afterwards = afterwards);
      } else {
        p.failed(failure);
      }
    } catch (RuntimeException | Error ex) {
      log.error("{} failed to take the outcome of its commit", lane, ex);
      entries.forEach(le -> le.failure = ex);
    }
  }

  /**
   * Marks the batch done and wakes its callers, hands its futures to the commit thread, and passes the turn on: to
   * the first caller waiting in the queue if there is one (the next batch is the whole queue, so which caller
   * commits it does not matter), else to the commit thread if asynchronous changes wait, else to whoever comes.
   */
  private void finish(List<Entry> batch) {
    lock.lock();
    try {
      for (Entry e : batch) {
        e.done = true;
        if (e.wake != null) {
          e.wake.signal();
        }
        if (e instanceof Changes c && c.future != null) {
          if (c.failure == null) {
            succeeded.add(c.future);
          } else {
            failed.add(Map.entry(c.future, c.failure));
          }
        }
      }
      Entry next = null;
      for (Entry e : queue) {
        if (e.wake != null) {
          next = e;
          break;
        }
      }
      if (next != null) {
        next.leads = true; // committing stays set: the turn is its
        next.wake.signal();
      } else {
        committing = false;
        turn.signalAll();
      }
      if ((asyncQueued > 0 && next == null) || !succeeded.isEmpty() || !failed.isEmpty() || stopped) {
        work.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  /** The commit thread: completes futures, and commits when asynchronous changes wait and no one else commits. */
  private void runCommitThread() {
    while (true) {
      List<CompletableFuture<Void>> ok;
      List<Map.Entry<CompletableFuture<Void>, Throwable>> bad;
      List<Entry> batch = null;
      lock.lock();
      try {
        while (succeeded.isEmpty() && failed.isEmpty() && (committing || asyncQueued == 0)
            && !(stopped && !committing && queue.isEmpty())) {
          work.awaitUninterruptibly();
        }
        ok = succeeded;
        succeeded = new ArrayList<>();
        bad = List.copyOf(failed);
        failed.clear();
        if (!committing && !queue.isEmpty()) {
          committing = true;
          batch = queue;
          queue = new ArrayList<>();
          asyncQueued = 0;
        } else if (ok.isEmpty() && bad.isEmpty() && stopped && !committing && queue.isEmpty()) {
          return;
        }
      } finally {
        lock.unlock();
      }
      complete(ok, bad);
      if (batch != null) {
        commitBatch(batch, null);
      }
    }
  }

  private static void complete(List<CompletableFuture<Void>> ok, List<Map.Entry<CompletableFuture<Void>, Throwable>> bad) {
    for (CompletableFuture<Void> f : ok) {
      try {
        f.complete(null);
      } catch (RuntimeException ex) {
        log.error("a stage attached to a state commit threw", ex);
      }
    }
    for (Map.Entry<CompletableFuture<Void>, Throwable> f : bad) {
      try {
        f.getKey().completeExceptionally(f.getValue());
      } catch (RuntimeException ex) {
        log.error("a stage attached to a state commit threw", ex);
      }
    }
  }

  // ---- reads: straight to the store below ----

  @Override
  public Optional<byte[]> get(String key) {
    return store.get(key);
  }

  @Override
  public Map<String, byte[]> loadAll() {
    return store.loadAll();
  }

  @Override
  public Map<String, byte[]> loadAll(String prefix) {
    return store.loadAll(prefix);
  }

  // ---- lifecycle ----

  /**
   * Commits what is queued, completes every future and ends the commit thread; later writes fail with
   * {@link IllegalStateException}. Leaves the store below open. Idempotent.
   */
  public void stop() {
    Thread t;
    lock.lock();
    try {
      stopped = true;
      work.signal();
      t = thread;
      // Synchronous callers queued now commit themselves; wait for them and for a commit in flight.
      while (t == null && (committing || !queue.isEmpty())) {
        if (!committing) {
          committing = true;
          List<Entry> batch = queue;
          queue = new ArrayList<>();
          asyncQueued = 0;
          lock.unlock();
          try {
            commitBatch(batch, null);
          } finally {
            lock.lock();
          }
        } else {
          turn.awaitUninterruptibly();
        }
      }
    } finally {
      lock.unlock();
    }
    if (t != null && t != Thread.currentThread()) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** {@link #stop()}, then closes the store below. Idempotent. */
  @Override
  public void close() {
    stop();
    store.close();
  }

  @Override
  public String toString() {
    return "GroupCommitStore[" + store + "]";
  }
}
