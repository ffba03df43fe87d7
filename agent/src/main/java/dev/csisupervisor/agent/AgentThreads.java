package dev.csisupervisor.agent;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The agent's threads, all daemons, named after their job:
 * <ul>
 *   <li>{@code csi-agent-N}: the scheduler (2 threads) that supervision, restarts, discovery,
 *       resource sampling and log rotation run on; nothing blocking runs there;
 *   <li>{@code csi-agent-events-N}: delivers registry events to the agent's own subscribers and
 *       to the admin API's event streams;
 *   <li>{@code csi-agent-listeners-N}: delivers {@link AgentListener} calls, one at a time, in
 *       order, outside every lock;
 *   <li>{@code csi-agent-io-N}: blocking work off the scheduler (artifact downloads and
 *       unpacking, closing clients), up to 4 threads that end when idle.
 * </ul>
 */
final class AgentThreads {
  final ScheduledExecutorService scheduler;
  final ExecutorService events;
  final ExecutorService listeners;
  final ThreadPoolExecutor io;

  AgentThreads() {
    ScheduledThreadPoolExecutor s = new ScheduledThreadPoolExecutor(2, daemon("csi-agent"));
    // Cancelled probes and restarts must not pile up in the queue.
    s.setRemoveOnCancelPolicy(true);
    scheduler = s;
    events = Executors.newSingleThreadExecutor(daemon("csi-agent-events"));
    listeners = Executors.newSingleThreadExecutor(daemon("csi-agent-listeners"));
    io = new ThreadPoolExecutor(4, 4, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
        daemon("csi-agent-io"));
    io.allowCoreThreadTimeOut(true);
  }

  /** Stops the scheduler (supervision, timers) and waits up to 2 s for it. Idempotent. */
  void shutdownScheduler() {
    scheduler.shutdownNow();
    try {
      scheduler.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops every thread; listener events already queued are still delivered. */
  void shutdown() {
    shutdownScheduler();
    events.shutdown();
    listeners.shutdown();
    io.shutdownNow();
  }

  private static ThreadFactory daemon(String name) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
