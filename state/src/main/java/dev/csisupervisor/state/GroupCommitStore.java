package dev.csisupervisor.state;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Function;

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
 * {@link #applyAsync} returns at once; its future completes once the change is durable, on a thread of its own
 * ({@code csi-state-commit-callbacks}, in commit order), never on a thread that commits: the commit thread
 * ({@code csi-state-commit}) only commits, so no change waits behind what a caller attached to its future, and such
 * a stage may even commit synchronously. A synchronous commit made from a thread in the middle of a commit (the
 * commit thread, or a lane's callback) would wait on itself: it is refused with {@link IllegalStateException}. A
 * {@link CommitLane} is for a module whose changes are computed from memory that only a successful commit may
 * change (the registry).
 *
 * <p>{@link #get} and {@link #loadAll} read the store below directly; {@code put} and {@code delete} are
 * {@link #apply} of one change. Thread-safe. {@link #close()} commits what is
 * queued, ends the commit thread and closes the store below; {@link #stop()} does the same but leaves the store
 * open (for a module that made this committer over a store it does not own).
 */
public final class GroupCommitStore implements StateStore {
  private final StateStore store; // the store below
  private final BatchCommit batches;
  private final ReentrantLock lock = new ReentrantLock();
  /** Signalled when no commit is in flight any more: for {@link #stop} and a stopped lane (callers with a change
   * wait on their own {@link CommitEntry#wake}, so that a commit wakes its own callers and the next leader, not all). */
  private final Condition turn = lock.newCondition();
  /** The commit thread: asynchronous changes to commit, or the store stopped. */
  private final Condition work = lock.newCondition();
  private List<CommitEntry> queue = new ArrayList<>(); // guarded by lock
  private int asyncQueued; // guarded by lock: asynchronous entries in queue
  private boolean committing; // guarded by lock
  /** The thread committing a batch now (it holds the turn and is outside the lock), or null. */
  private volatile Thread inCommit;
  private volatile Thread thread; // written under lock; started at the first asynchronous change
  private CommitCallbacks callbacks; // guarded by lock; started with the commit thread
  private boolean stopped; // guarded by lock
  private long wakeups; // guarded by lock: how often callers waiting for their outcome or turn were woken

  private GroupCommitStore(StateStore store) {
    this.store = store;
    this.batches = new BatchCommit(store);
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
   * lane's requests of a batch, in arrival order (see {@link CommitLane}). A throwing {@code prepare} fails its requests
   * (through {@link CommitLane#submit} it throws to each caller) and leaves the rest of the batch alone.
   */
  public <Q> CommitLane<Q> lane(String name, Function<List<Q>, CommitLane.Prepared> prepare) {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("name must not be null or blank");
    }
    return new CommitLane<>(this, name, requireNonNull(prepare, "prepare"));
  }

  // ---- writes ----

  @Override
  public void apply(List<StateChange> changes) {
    List<StateChange> checked = checked(changes);
    if (checked.isEmpty()) {
      return;
    }
    CommitEntry.Changes e = new CommitEntry.Changes(checked, null);
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
   * completes on the callbacks thread ({@code csi-state-commit-callbacks}, in commit order) once they are durable, or fails with the store's exception (then nothing of
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
      queue.add(new CommitEntry.Changes(checked, future));
      asyncQueued++;
      if (thread == null) {
        callbacks = new CommitCallbacks();
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
    return batches.commits();
  }

  /** How many changes they held. */
  public long changes() {
    return batches.changes();
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
  void commitAndWait(CommitEntry e) {
    if (inCommit == Thread.currentThread() || isCommitThread()) {
      throw new IllegalStateException("a synchronous commit from " + Thread.currentThread().getName()
          + ", in the middle of a commit, would wait on itself: commit asynchronously (applyAsync) there");
    }
    List<CommitEntry> batch;
    Throwable refused = null;
    lock.lock();
    try {
      if (stopped) {
        refused = new IllegalStateException("state store " + store + " is closed");
        if (!(e instanceof CommitEntry.LaneRequest<?>)) {
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
        batch = takeQueue();
      }
    } finally {
      lock.unlock();
    }
    commitBatch(batch, refused);
  }

  /** Under the lock: every queued entry, as the next batch; the queue starts empty. */
  private List<CommitEntry> takeQueue() {
    List<CommitEntry> batch = queue;
    queue = new ArrayList<>();
    asyncQueued = 0;
    return batch;
  }

  private boolean isCommitThread() {
    return thread == Thread.currentThread();
  }

  /**
   * Under the lock, {@code e} queued: returns false once another thread's commit did it, or true, holding the turn
   * ({@code committing} set), when this thread is to commit: at once when no commit is in flight, else when the
   * commit in flight hands it the turn (its caller was the first waiting in the queue). Only this thread is woken
   * for it: waking every waiter at each commit (to find out which is next) sent all but one back to sleep, a
   * context switch each (benchmarks/README.md 15b: half the fsyncs since, the tail unchanged).
   */
  private boolean awaitOutcomeOrTurn(CommitEntry e) {
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
   * Commits {@code batch} (this thread holds the turn; {@link BatchCommit}), then marks its entries done, hands its
   * futures to the callbacks thread and passes the turn on. {@code refused} (not null) fails the batch without a
   * write: the store was stopped.
   */
  private void commitBatch(List<CommitEntry> batch, Throwable refused) {
    inCommit = Thread.currentThread();
    try {
      batches.commit(batch, refused);
    } finally {
      inCommit = null;
      finish(batch);
    }
  }

  /**
   * Marks the batch done and wakes its callers, hands its futures to the commit thread, and passes the turn on: to
   * the first caller waiting in the queue if there is one (the next batch is the whole queue, so which caller
   * commits it does not matter), else to the commit thread if asynchronous changes wait, else to whoever comes.
   */
  private void finish(List<CommitEntry> batch) {
    lock.lock();
    try {
      List<Map.Entry<CompletableFuture<Void>, Throwable>> outcomes = new ArrayList<>();
      for (CommitEntry e : batch) {
        e.done = true;
        if (e.wake != null) {
          e.wake.signal();
        }
        if (e instanceof CommitEntry.Changes c && c.future != null) {
          outcomes.add(new java.util.AbstractMap.SimpleImmutableEntry<>(c.future, c.failure));
        }
      }
      if (!outcomes.isEmpty()) {
        callbacks.complete(outcomes); // under the lock: in commit order
      }
      CommitEntry next = null;
      for (CommitEntry e : queue) {
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
      if ((asyncQueued > 0 && next == null) || stopped) {
        work.signal();
      }
    } finally {
      lock.unlock();
    }
  }

  /** The commit thread: commits when asynchronous changes wait and no one else commits; nothing else. */
  private void runCommitThread() {
    while (true) {
      List<CommitEntry> batch;
      lock.lock();
      try {
        while ((committing || asyncQueued == 0) && !(stopped && !committing && queue.isEmpty())) {
          work.awaitUninterruptibly();
        }
        if (committing || queue.isEmpty()) {
          return; // stopped, and nothing is left to commit
        }
        committing = true;
        batch = takeQueue();
      } finally {
        lock.unlock();
      }
      commitBatch(batch, null);
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
   * Commits what is queued, completes every future and ends the commit and callbacks threads (waiting for them,
   * unless called from one); later writes fail with {@link IllegalStateException}. Leaves the store below open.
   * Idempotent.
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
          List<CommitEntry> batch = takeQueue();
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
    CommitCallbacks c;
    lock.lock();
    try {
      c = callbacks;
    } finally {
      lock.unlock();
    }
    if (c != null) {
      c.stop(); // after the commit thread: every future was handed over
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
