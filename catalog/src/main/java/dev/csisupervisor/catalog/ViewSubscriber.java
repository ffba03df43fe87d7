package dev.csisupervisor.catalog;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One subscriber of a {@link ClusterView}: its own bounded queue drained on its own executor, isolated. */
final class ViewSubscriber implements ClusterSubscription {
  private static final Logger log = LoggerFactory.getLogger(ViewSubscriber.class);

  private final ClusterListener listener;
  private final Executor executor;
  private final ClusterSnapshot snapshot;
  private final long snapshotSequence;
  private final int maxBacklog;
  private final Runnable onEnd;

  private final ArrayDeque<ClusterEvent> queue = new ArrayDeque<>();
  private boolean draining;
  private boolean active = true;
  private boolean endDelivered;
  private long lagged = -1;
  private long lastDelivered;

  ViewSubscriber(ClusterListener listener, Executor executor, ClusterSnapshot snapshot, long snapshotSequence,
      int maxBacklog, Runnable onEnd) {
    this.listener = listener;
    this.executor = executor;
    this.snapshot = snapshot;
    this.snapshotSequence = snapshotSequence;
    this.lastDelivered = snapshotSequence;
    this.maxBacklog = maxBacklog;
    this.onEnd = onEnd;
  }

  @Override
  public ClusterSnapshot snapshot() {
    return snapshot;
  }

  @Override
  public long snapshotSequence() {
    return snapshotSequence;
  }

  @Override
  public synchronized boolean isActive() {
    return active;
  }

  /** Called by the view in event order. */
  void offer(ClusterEvent e) {
    synchronized (this) {
      if (!active || e.sequence() <= snapshotSequence) {
        return;
      }
      if (queue.size() >= maxBacklog) {
        active = false;
        queue.clear();
        lagged = lastDelivered;
      } else {
        queue.add(e);
      }
    }
    schedule();
  }

  @Override
  public void close() {
    synchronized (this) {
      if (!active) {
        return;
      }
      active = false;
      queue.clear();
    }
    schedule();
  }

  private void schedule() {
    synchronized (this) {
      if (draining) {
        return;
      }
      draining = true;
    }
    try {
      executor.execute(this::drain);
    } catch (RejectedExecutionException e) {
      synchronized (this) {
        draining = false;
        active = false;
        queue.clear();
      }
      log.warn("cluster view subscriber's executor rejected delivery; subscription ended");
      onEnd.run();
    }
  }

  private void drain() {
    while (true) {
      ClusterEvent next;
      boolean end = false;
      long lag;
      synchronized (this) {
        next = queue.poll();
        lag = lagged;
        if (next == null) {
          if (!active && !endDelivered) {
            endDelivered = true;
            end = true;
          } else {
            draining = false;
            return;
          }
        }
      }
      if (end) {
        if (lag >= 0) {
          call(() -> listener.onLagged(lag));
        }
        call(listener::onClosed);
        onEnd.run();
        synchronized (this) {
          draining = false;
        }
        return;
      }
      synchronized (this) {
        lastDelivered = next.sequence(); // handed over (a lag from now on reports it as delivered)
      }
      call(() -> listener.onEvent(next));
    }
  }

  private static void call(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("cluster view listener threw; it keeps its subscription", e);
    }
  }
}
