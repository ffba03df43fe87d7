package dev.csisupervisor.volumes;

import dev.csisupervisor.common.ExponentialBackoff;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a volume's pending work is tried again after a failed settle: one timer per volume, on a backoff of its
 * own that grows with each failure and starts over once the work is done or the node plugin is ready again.
 * Thread-safe (its own monitor); after {@link #close} nothing is scheduled.
 */
final class SettleRetries {
  private static final Logger log = LoggerFactory.getLogger(SettleRetries.class);

  private final ScheduledExecutorService scheduler;
  private final Duration initial;
  private final Duration max;
  private final Random random;
  private final Consumer<VolumeKey> settle;
  private final Map<VolumeKey, ScheduledFuture<?>> timers = new HashMap<>();
  private final Map<VolumeKey, ExponentialBackoff> backoffs = new HashMap<>();
  private boolean closed;

  /** @param settle what a timer runs: the volume's settle, on its lane */
  SettleRetries(ScheduledExecutorService scheduler, Duration initial, Duration max, Random random,
      Consumer<VolumeKey> settle) {
    this.scheduler = scheduler;
    this.initial = initial;
    this.max = max;
    this.random = random;
    this.settle = settle;
  }

  /** The next try of {@code key}'s work, one step further on its backoff (a timer already set is replaced). */
  synchronized void schedule(VolumeKey key) {
    if (closed) {
      return;
    }
    ExponentialBackoff backoff = backoffs.computeIfAbsent(key, k -> ExponentialBackoff.doubling(initial, max, random));
    ScheduledFuture<?> old = timers.remove(key);
    if (old != null) {
      old.cancel(false);
    }
    try {
      timers.put(key, scheduler.schedule(() -> {
        synchronized (this) {
          timers.remove(key);
        }
        settle.accept(key);
      }, backoff.next().toNanos(), TimeUnit.NANOSECONDS));
    } catch (RejectedExecutionException e) {
      log.debug("scheduler stopped: volume {} stays pending for the next start", key);
    }
  }

  /** No more tries of {@code key} (its work is done, or it is being settled now); its backoff starts over. */
  synchronized void clear(VolumeKey key) {
    ScheduledFuture<?> t = timers.remove(key);
    if (t != null) {
      t.cancel(false);
    }
    backoffs.remove(key);
  }

  synchronized void close() {
    closed = true;
    timers.values().forEach(t -> t.cancel(false));
    timers.clear();
  }
}
