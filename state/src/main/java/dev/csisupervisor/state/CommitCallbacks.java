package dev.csisupervisor.state;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Completes the futures of {@link GroupCommitStore#applyAsync} on a thread of their own ({@value #THREAD}), in
 * commit order: what callers attach to them (the volume manager's continuations: reads of the mount table,
 * directories made, the next commit asked for) never runs on a thread that commits, so no registry change waits
 * behind it, and one that commits synchronously does not wait on itself. A stage that blocks delays the completion
 * of the futures after it (never their commits): stages still must not block.
 */
final class CommitCallbacks {
  static final String THREAD = "csi-state-commit-callbacks";
  private static final Logger log = LoggerFactory.getLogger(GroupCommitStore.class);

  private final ExecutorService executor;
  private volatile Thread thread;

  CommitCallbacks() {
    executor = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
      Thread t = new Thread(r, THREAD);
      t.setDaemon(true);
      thread = t;
      return t;
    });
  }

  /** Completes each future with its failure (null: success), later, in this order, after those handed before. */
  void complete(List<Map.Entry<CompletableFuture<Void>, Throwable>> outcomes) {
    try {
      executor.execute(() -> completeNow(outcomes));
    } catch (RejectedExecutionException e) {
      completeNow(outcomes); // stopped from inside a commit: the last batch's callers still hear of it
    }
  }

  private static void completeNow(List<Map.Entry<CompletableFuture<Void>, Throwable>> outcomes) {
    for (Map.Entry<CompletableFuture<Void>, Throwable> o : outcomes) {
      try {
        if (o.getValue() == null) {
          o.getKey().complete(null);
        } else {
          o.getKey().completeExceptionally(o.getValue());
        }
      } catch (RuntimeException ex) {
        log.error("a stage attached to a state commit threw", ex);
      }
    }
  }

  /** Whether the calling thread is this one's. */
  boolean isCurrentThread() {
    return Thread.currentThread() == thread;
  }

  /** Completes what was handed over, then ends the thread; waits for that unless called from it. */
  void stop() {
    executor.shutdown();
    if (isCurrentThread()) {
      return;
    }
    boolean interrupted = false;
    while (true) {
      try {
        if (executor.awaitTermination(1, TimeUnit.DAYS)) {
          break;
        }
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
