package dev.csisupervisor.registry;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One subscription: a bounded queue of events filled by the registry (under its state lock, without running
 * any listener code) and drained on the subscriber's executor by at most one drain task at a time, so listener
 * calls are serialized and in order.
 *
 * <p>Ending: {@link #end} (own close or registry close) or a full queue (lag) marks the subscription ended,
 * drops undelivered events and leaves the ending signal ({@code onLagged} + {@code onClosed}, or just
 * {@code onClosed}) as the last thing the drain delivers. A delivery checks {@code active} under
 * {@code deliveryLock}, and closing waits for that lock, so no {@code onEvent} begins after a close returns.
 */
final class Subscriber implements Subscription {
  private static final Logger log = LoggerFactory.getLogger(Subscriber.class);

  /** Events delivered per drain task before it yields its executor thread and resubmits itself. */
  private static final int DRAIN_BATCH = 256;

  private enum Ending { LAGGED, CLOSED }

  private final PluginType type;
  private final PluginListener listener;
  private final Executor executor;
  private final int maxBacklog;
  private final List<PluginInfo> snapshot;
  private final long snapshotSequence;
  private final Duration closeTimeout;
  private final Consumer<Subscriber> unregister;

  private final ArrayDeque<PluginEvent> queue = new ArrayDeque<>(); // guarded by this
  private boolean scheduled; // guarded by this: a drain task is submitted or running
  private Ending ending; // guarded by this: null while active
  private boolean endingDelivered; // guarded by this
  private volatile boolean active = true;

  private final ReentrantLock deliveryLock = new ReentrantLock();
  private long lastDeliveredSequence; // guarded by deliveryLock

  /**
   * How every subscription of a registry is bounded.
   *
   * @param maxBacklog how many undelivered events a subscriber may have before it is dropped as lagged
   * @param closeTimeout how long a subscriber's close waits for a delivery in flight
   */
  record Limits(int maxBacklog, Duration closeTimeout) {}

  /** What a subscription starts from: the registrations of its type, as of event {@code sequence}. */
  record Start(List<PluginInfo> snapshot, long sequence) {}

  Subscriber(PluginType type, PluginListener listener, Executor executor, Limits limits, Start start,
      Consumer<Subscriber> unregister) {
    this.type = type;
    this.listener = listener;
    this.executor = executor;
    this.maxBacklog = limits.maxBacklog();
    this.snapshot = List.copyOf(start.snapshot());
    this.snapshotSequence = start.sequence();
    this.lastDeliveredSequence = start.sequence();
    this.closeTimeout = limits.closeTimeout();
    this.unregister = unregister;
  }

  PluginType type() {
    return type;
  }

  @Override
  public List<PluginInfo> snapshot() {
    return snapshot;
  }

  @Override
  public long snapshotSequence() {
    return snapshotSequence;
  }

  @Override
  public boolean isActive() {
    return active;
  }

  /**
   * Queues an event; called by the registry under its state lock. Returns false if this subscriber is (now)
   * ended, in which case the registry drops it from its list; the caller schedules a drain either way.
   */
  boolean offer(PluginEvent event) {
    synchronized (this) {
      if (ending != null) {
        return false;
      }
      if (queue.size() >= maxBacklog) {
        long oldest = queue.peekFirst().sequence();
        endLocked(Ending.LAGGED);
        log.warn("{} subscriber {} lagged: {} undelivered events (#{}..#{}) exceed the backlog bound {}; dropping it,"
            + " it must re-subscribe", type.id(), listener, maxBacklog, oldest, event.sequence(), maxBacklog);
        return false;
      }
      queue.addLast(event);
      return true;
    }
  }

  /** Marks this subscription closed. Returns true if this call ended it. Does not wait or deliver. */
  boolean end() {
    synchronized (this) {
      if (ending != null) {
        return false;
      }
      endLocked(Ending.CLOSED);
      return true;
    }
  }

  private void endLocked(Ending why) {
    ending = why;
    active = false;
    queue.clear();
  }

  @Override
  public void close() {
    if (end()) {
      unregister.accept(this);
    }
    awaitDeliveryInFlight();
    scheduleDrain();
  }

  /** Waits (bounded) for an {@code onEvent} running on another thread; a no-op inside the listener itself. */
  void awaitDeliveryInFlight() {
    if (deliveryLock.isHeldByCurrentThread()) {
      return;
    }
    try {
      if (deliveryLock.tryLock(closeTimeout.toNanos(), TimeUnit.NANOSECONDS)) {
        deliveryLock.unlock();
      } else {
        log.warn("{} listener {} is still running after {}; closing without waiting for it", type.id(), listener, closeTimeout);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Submits a drain task if there is something to deliver and none is pending. Call without registry locks. */
  void scheduleDrain() {
    synchronized (this) {
      boolean work = ending == null ? !queue.isEmpty() : !endingDelivered;
      if (scheduled || !work) {
        return;
      }
      scheduled = true;
    }
    try {
      executor.execute(this::drain);
    } catch (RuntimeException e) {
      // Typically RejectedExecutionException from a shut-down executor: nothing more can reach this listener
      // on its executor, so end the subscription and give it its ending signal here.
      log.warn("{} subscriber {}: executor {} rejected delivery; ending the subscription", type.id(), listener, executor, e);
      boolean endedNow;
      Ending end;
      synchronized (this) {
        scheduled = false;
        endedNow = ending == null;
        if (endedNow) {
          endLocked(Ending.CLOSED);
        }
        end = endingDelivered ? null : ending;
        endingDelivered = true;
      }
      if (endedNow) {
        unregister.accept(this);
      }
      if (end != null) {
        deliverEnding(end);
      }
    }
  }

  private void drain() {
    try {
      for (int delivered = 0; ; delivered++) {
        PluginEvent next = null;
        Ending end = null;
        synchronized (this) {
          if (ending == null && !queue.isEmpty() && delivered < DRAIN_BATCH) {
            next = queue.pollFirst();
          } else if (ending != null && !endingDelivered) {
            endingDelivered = true;
            end = ending;
          } else {
            scheduled = false;
            if (ending == null && !queue.isEmpty()) {
              break; // batch used up: resubmit below so other tasks on this executor get a turn
            }
            return;
          }
        }
        if (next != null) {
          deliver(next);
        } else {
          deliverEnding(end);
          synchronized (this) {
            scheduled = false;
          }
          return;
        }
      }
    } catch (VirtualMachineError e) {
      synchronized (this) {
        scheduled = false;
      }
      throw e;
    }
    scheduleDrain();
  }

  private void deliver(PluginEvent event) {
    deliveryLock.lock();
    try {
      if (!active) {
        return; // ended after this event was taken from the queue: it is dropped with the rest
      }
      try {
        listener.onEvent(event);
      } catch (VirtualMachineError e) {
        throw e;
      } catch (Throwable t) {
        log.warn("{} listener {} threw on event #{} ({} {}); it stays subscribed", type.id(), listener,
            event.sequence(), event.kind(), event.plugin().key(), t);
      }
      lastDeliveredSequence = event.sequence();
    } finally {
      deliveryLock.unlock();
    }
  }

  private void deliverEnding(Ending end) {
    deliveryLock.lock();
    try {
      if (end == Ending.LAGGED) {
        long last = lastDeliveredSequence;
        safely("onLagged", () -> listener.onLagged(last));
      }
      safely("onClosed", listener::onClosed);
    } finally {
      deliveryLock.unlock();
    }
  }

  private void safely(String what, Runnable call) {
    try {
      call.run();
    } catch (VirtualMachineError e) {
      throw e;
    } catch (Throwable t) {
      log.warn("{} listener {} threw in {}", type.id(), listener, what, t);
    }
  }

  @Override
  public String toString() {
    return "Subscription[" + type.id() + ", " + listener + ", active=" + active + "]";
  }
}
