package dev.csisupervisor.registry;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/** An executor whose tasks run only when the test says so: a subscriber that is as slow as the test wants. */
final class ManualExecutor implements Executor {
  private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
  private boolean shutdown;

  @Override
  public synchronized void execute(Runnable task) {
    if (shutdown) {
      throw new RejectedExecutionException("manual executor is shut down");
    }
    tasks.add(task);
  }

  synchronized void shutdown() {
    shutdown = true;
  }

  synchronized int queued() {
    return tasks.size();
  }

  /** Runs queued tasks (and the ones they queue) until none is left; returns how many ran. */
  int runAll() {
    int ran = 0;
    while (true) {
      Runnable next;
      synchronized (this) {
        next = tasks.poll();
      }
      if (next == null) {
        return ran;
      }
      next.run();
      ran++;
    }
  }
}
