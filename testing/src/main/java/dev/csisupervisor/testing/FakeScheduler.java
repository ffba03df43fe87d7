package dev.csisupervisor.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A deterministic {@link ScheduledExecutorService} with virtual time, in the spirit of grpc-java's
 * {@code FakeClock}: nothing runs until the test calls {@link #runDueTasks()} or
 * {@link #forwardTime}; {@link #clock()} reads the same virtual time.
 */
public final class FakeScheduler extends AbstractExecutorService implements ScheduledExecutorService {
  private static final Instant EPOCH = Instant.parse("2026-01-01T00:00:00Z");

  private final PriorityQueue<Task<?>> queue = new PriorityQueue<>();
  private long nowNanos;
  private long seq;

  public final class Task<V> extends FutureTask<V> implements ScheduledFuture<V> {
    final long dueNanos;
    final long order = seq++;

    Task(Callable<V> c, long dueNanos) {
      super(c);
      this.dueNanos = dueNanos;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(dueNanos - nowNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      Task<?> t = (Task<?>) o;
      int c = Long.compare(dueNanos, t.dueNanos);
      return c != 0 ? c : Long.compare(order, t.order);
    }
  }

  public Clock clock() {
    return new Clock() {
      @Override
      public ZoneId getZone() {
        return ZoneOffset.UTC;
      }

      @Override
      public Clock withZone(ZoneId zone) {
        return this;
      }

      @Override
      public Instant instant() {
        synchronized (FakeScheduler.this) {
          return EPOCH.plusNanos(nowNanos);
        }
      }
    };
  }

  /** Runs every task due now, including tasks those tasks submit for now. Returns how many. */
  public int runDueTasks() {
    int ran = 0;
    while (true) {
      Task<?> next;
      synchronized (this) {
        next = queue.peek();
        if (next == null || next.dueNanos > nowNanos) {
          return ran;
        }
        queue.poll();
      }
      if (!next.isCancelled()) {
        next.run();
        ran++;
      }
    }
  }

  /** Advances virtual time step by step, running each task at its due time. */
  public void forwardTime(long amount, TimeUnit unit) {
    long target;
    synchronized (this) {
      target = nowNanos + unit.toNanos(amount);
    }
    while (true) {
      runDueTasks();
      synchronized (this) {
        Task<?> next = queue.peek();
        while (next != null && next.isCancelled()) {
          queue.poll();
          next = queue.peek();
        }
        if (next == null || next.dueNanos > target) {
          nowNanos = target;
          break;
        }
        nowNanos = next.dueNanos;
      }
    }
    runDueTasks();
  }

  public void forwardTime(Duration d) {
    forwardTime(d.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Delays of pending (not cancelled) tasks, soonest first. */
  public synchronized List<Duration> pendingDelays() {
    List<Task<?>> tasks = new ArrayList<>(queue);
    tasks.sort(null);
    List<Duration> out = new ArrayList<>();
    for (Task<?> t : tasks) {
      if (!t.isCancelled()) {
        out.add(Duration.ofNanos(t.dueNanos - nowNanos));
      }
    }
    return out;
  }

  public synchronized int pendingCount() {
    return (int) queue.stream().filter(t -> !t.isCancelled()).count();
  }

  private synchronized <V> Task<V> add(Callable<V> c, long delayNanos) {
    Task<V> t = new Task<>(c, nowNanos + Math.max(0, delayNanos));
    queue.add(t);
    return t;
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    return add(() -> {
      command.run();
      return null;
    }, unit.toNanos(delay));
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    return add(callable, unit.toNanos(delay));
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(Runnable c, long i, long p, TimeUnit u) {
    throw new UnsupportedOperationException("FakeScheduler runs one-shot tasks only");
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(Runnable c, long i, long d, TimeUnit u) {
    throw new UnsupportedOperationException("FakeScheduler runs one-shot tasks only");
  }

  @Override
  public void execute(Runnable command) {
    schedule(command, 0, TimeUnit.NANOSECONDS);
  }

  @Override
  public void shutdown() {}

  @Override
  public List<Runnable> shutdownNow() {
    return List.of();
  }

  @Override
  public boolean isShutdown() {
    return false;
  }

  @Override
  public boolean isTerminated() {
    return false;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return true;
  }
}
