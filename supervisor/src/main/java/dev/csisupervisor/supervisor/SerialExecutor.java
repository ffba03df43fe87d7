package dev.csisupervisor.supervisor;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks one at a time, in submission order, on a delegate executor; a task that throws is
 * logged and the next one still runs. {@link #execute} never runs the task on the caller's thread,
 * so a hook may submit under its lock and the task runs outside it. Thread-safe.
 */
final class SerialExecutor implements Executor {
  private static final Logger log = LoggerFactory.getLogger(SerialExecutor.class);

  private final Executor delegate;
  private final Queue<Runnable> queue = new ArrayDeque<>();
  private boolean draining; // guarded by queue

  SerialExecutor(Executor delegate) {
    this.delegate = delegate;
  }

  @Override
  public void execute(Runnable task) {
    synchronized (queue) {
      queue.add(task);
      if (draining) {
        return;
      }
      draining = true;
    }
    try {
      delegate.execute(this::drain);
    } catch (RejectedExecutionException e) {
      synchronized (queue) {
        draining = false;
        queue.clear();
      }
      log.debug("executor shut down: dropping queued notifications", e);
    }
  }

  private void drain() {
    while (true) {
      Runnable next;
      synchronized (queue) {
        next = queue.poll();
        if (next == null) {
          draining = false;
          return;
        }
      }
      try {
        next.run();
      } catch (RuntimeException e) {
        log.error("notification threw", e);
      }
    }
  }
}
