package dev.csisupervisor.volumes;

import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits state changes asynchronously, sharing one {@link StateStore#apply} (one journal write and
 * one fsync) among every change waiting at that moment: 100 volumes mounting at once cost a handful
 * of fsyncs, not 200. One thread, {@code csi-volumes-commit}, does every commit, so the callers
 * (gRPC I/O threads, the scheduler) never wait on the disk.
 *
 * <p>A returned future completes once its changes are durable, or fails with the store's
 * exception, and then nothing of its batch was committed. It completes on the commit thread:
 * stages attached to it must not block. Thread-safe.
 */
final class GroupCommitter implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(GroupCommitter.class);

  private record Pending(List<StateChange> changes, CompletableFuture<Void> done) {}

  private final StateStore store;
  private final Thread thread;
  private final Object lock = new Object();
  private List<Pending> queue = new ArrayList<>(); // guarded by lock
  private boolean closed; // guarded by lock
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong changes = new AtomicLong();

  GroupCommitter(StateStore store) {
    this.store = store;
    this.thread = new Thread(this::run, "csi-volumes-commit");
    this.thread.setDaemon(true);
    this.thread.start();
  }

  /** Commits {@code changes} in the next group; the future completes once they are durable. */
  CompletableFuture<Void> commit(List<StateChange> changes) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    synchronized (lock) {
      if (closed) {
        done.completeExceptionally(new IllegalStateException("volume manager is closed"));
        return done;
      }
      queue.add(new Pending(List.copyOf(changes), done));
      lock.notifyAll();
    }
    return done;
  }

  /** How many {@link StateStore#apply} calls (one fsync each) were made. */
  long commits() {
    return commits.get();
  }

  /** How many changes they held. */
  long changes() {
    return changes.get();
  }

  private void run() {
    while (true) {
      List<Pending> batch;
      synchronized (lock) {
        while (queue.isEmpty() && !closed) {
          try {
            lock.wait();
          } catch (InterruptedException e) {
            // Only close() ends this thread; an interrupt alone does not drop queued commits.
          }
        }
        if (queue.isEmpty()) {
          return;
        }
        batch = queue;
        queue = new ArrayList<>();
      }
      List<StateChange> all = new ArrayList<>();
      batch.forEach(p -> all.addAll(p.changes()));
      Throwable failure = null;
      try {
        store.apply(all);
        commits.incrementAndGet();
        changes.addAndGet(all.size());
      } catch (StateStoreException e) {
        log.warn("commit of {} volume change(s) failed; nothing of it changed: {}", all.size(), e.getMessage());
        failure = e;
      } catch (RuntimeException | Error e) {
        log.error("commit of {} volume change(s) failed; nothing of it changed", all.size(), e);
        failure = e;
      }
      for (Pending p : batch) {
        try {
          if (failure == null) {
            p.done().complete(null);
          } else {
            p.done().completeExceptionally(failure);
          }
        } catch (RuntimeException e) {
          log.error("a stage attached to a volume commit threw", e);
        }
      }
    }
  }

  /** Commits what is queued, then stops the thread. Idempotent. */
  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      lock.notifyAll();
    }
    if (Thread.currentThread() != thread) {
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
