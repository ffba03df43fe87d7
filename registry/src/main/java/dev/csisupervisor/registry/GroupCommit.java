package dev.csisupervisor.registry;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Group commit: writers queue their requests; while a commit is in flight they wait, and the first
 * one to find none in flight becomes the committer for everything queued at that moment (its own
 * request and every one that arrived while the previous commit ran, in arrival order). So a slow
 * commit (an fsync) is paid once per batch, not once per writer, and no thread of its own is needed.
 *
 * <p>The committer calls {@code commitBatch} outside the queue's lock; it sets every request's outcome
 * ({@link Request#succeed}, {@link Request#fail}) and returns what to run once the batch is marked done
 * and the lock released (the registry drains its subscribers there, so that a direct executor runs
 * listener code without any lock held).
 *
 * @param <Q> the requests of this queue
 */
final class GroupCommit<Q extends GroupCommit.Request<?>> {
  private final Object lock = new Object();
  private final Function<List<Q>, Runnable> commitBatch;
  private List<Q> pending = new ArrayList<>(); // guarded by lock
  private boolean committing; // guarded by lock: a committer is working on a batch

  GroupCommit(Function<List<Q>, Runnable> commitBatch) {
    this.commitBatch = commitBatch;
  }

  /**
   * Queues {@code request} and returns once it is done, committed by this thread or by another;
   * {@link Request#get()} then has its outcome. An interrupt does not end the wait (once queued, the
   * change may be committed by another thread and the caller must learn the outcome); it is restored.
   *
   * @throws RuntimeException or Error from {@code commitBatch} itself (a bug), after failing every
   *     request of the batch that had no outcome yet, so that no caller waits forever
   */
  void submit(Q request) {
    List<Q> batch;
    synchronized (lock) {
      pending.add(request);
      awaitCommitUninterruptibly(request);
      if (request.done) {
        return;
      }
      committing = true;
      batch = pending;
      pending = new ArrayList<>();
    }
    Runnable afterwards = null;
    try {
      afterwards = commitBatch.apply(batch);
    } catch (RuntimeException | Error e) {
      batch.forEach(r -> r.failIfOpen(e));
      throw e;
    } finally {
      synchronized (lock) {
        batch.forEach(Request::markDone);
        committing = false;
        lock.notifyAll();
      }
    }
    afterwards.run();
  }

  /**
   * Lets a commit in flight finish (its callers get their outcomes), then fails with {@code failure}
   * every request still queued. A caller that keeps submitting afterwards commits again: the owner
   * refuses new requests before it calls this.
   */
  void failQueued(Throwable failure) {
    synchronized (lock) {
      awaitCommitUninterruptibly(null);
      for (Q r : pending) {
        r.fail(failure);
        r.markDone();
      }
      pending = new ArrayList<>();
      lock.notifyAll();
    }
  }

  /**
   * Under {@link #lock}: waits while a commit is in flight, unless {@code request} (if any) is done
   * meanwhile.
   */
  private void awaitCommitUninterruptibly(Request<?> request) {
    boolean interrupted = false;
    while (committing && (request == null || !request.done)) {
      try {
        lock.wait();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * One caller's operation. The committer sets the outcome ({@link #succeed}/{@link #fail}); the queue
   * then marks it done under its lock, which is where the caller reads it.
   */
  abstract static class Request<R> {
    boolean done; // guarded by the queue's lock (set by markDone, read by GroupCommit's waits)
    private boolean outcomeSet;
    private Throwable failure;

    /** The answer of a request that succeeded. */
    abstract R result();

    final void succeed() {
      outcomeSet = true;
    }

    final void fail(Throwable t) {
      failure = t;
      outcomeSet = true;
    }

    final void failIfOpen(Throwable t) {
      if (!outcomeSet) {
        fail(t);
      }
    }

    final void markDone() {
      if (!outcomeSet) {
        fail(new IllegalStateException("internal error: request finished without an outcome"));
      }
      done = true;
    }

    /** The outcome, once {@link GroupCommit#submit} returned: the result, or the failure thrown. */
    final R get() {
      if (failure instanceof RuntimeException e) {
        throw e;
      }
      if (failure instanceof Error e) {
        throw e;
      }
      if (failure != null) {
        throw new IllegalStateException(failure);
      }
      return result();
    }
  }
}
