package dev.csisupervisor.registry;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A fake {@link ScheduledExecutorService} with its own time: {@link #advance(Duration)} runs what became due.
 * Only one-shot {@code schedule(Runnable, ...)} is supported; that is all the registry uses.
 */
final class ManualScheduler implements ScheduledExecutorService {
  private long nowNanos;
  private final List<Task> tasks = new ArrayList<>();

  final class Task implements ScheduledFuture<Object> {
    final long dueNanos;
    final Runnable command;
    boolean cancelled;
    boolean done;

    Task(long dueNanos, Runnable command) {
      this.dueNanos = dueNanos;
      this.command = command;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(dueNanos - nowNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
    }

    @Override
    public synchronized boolean cancel(boolean mayInterruptIfRunning) {
      if (done) {
        return false;
      }
      cancelled = true;
      return true;
    }

    @Override
    public synchronized boolean isCancelled() {
      return cancelled;
    }

    @Override
    public synchronized boolean isDone() {
      return done || cancelled;
    }

    @Override
    public Object get() {
      throw new UnsupportedOperationException();
    }

    @Override
    public Object get(long timeout, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }
  }

  @Override
  public synchronized ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    Task t = new Task(nowNanos + unit.toNanos(delay), command);
    tasks.add(t);
    return t;
  }

  /** Tasks scheduled and neither run nor cancelled. */
  synchronized List<Task> pending() {
    return tasks.stream().filter(t -> !t.isDone()).toList();
  }

  /** Moves time forward and runs every task that became due, in due order. */
  void advance(Duration d) {
    long target;
    synchronized (this) {
      target = nowNanos + d.toNanos();
    }
    while (true) {
      Task next;
      synchronized (this) {
        next = tasks.stream().filter(t -> !t.isDone() && t.dueNanos <= target)
            .min((a, b) -> Long.compare(a.dueNanos, b.dueNanos)).orElse(null);
        if (next == null) {
          nowNanos = target;
          return;
        }
        nowNanos = next.dueNanos;
        next.done = true;
      }
      next.command.run();
    }
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException();
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

  @Override
  public <T> Future<T> submit(Callable<T> task) {
    throw new UnsupportedOperationException();
  }

  @Override
  public <T> Future<T> submit(Runnable task, T result) {
    throw new UnsupportedOperationException();
  }

  @Override
  public Future<?> submit(Runnable task) {
    throw new UnsupportedOperationException();
  }

  @Override
  public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks) {
    throw new UnsupportedOperationException();
  }

  @Override
  public <T> List<Future<T>> invokeAll(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public <T> T invokeAny(Collection<? extends Callable<T>> tasks) {
    throw new UnsupportedOperationException();
  }

  @Override
  public <T> T invokeAny(Collection<? extends Callable<T>> tasks, long timeout, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void execute(Runnable command) {
    throw new UnsupportedOperationException();
  }
}
