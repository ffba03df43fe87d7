package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.common.Futures;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's CSI calls, made only while it is sure of its election (DESIGN.md "One acting controller"):
 * leadership is checked before each call, each call is cancelled before the election lease could expire if it is
 * not renewed meanwhile (the renew deadline inside the lease, as csi-lib-utils' 10 s of 15 s), and losing the lease
 * cancels every call in flight at once ({@link #cancelAll}). Thread-safe.
 */
final class LeaderCalls {
  private static final Logger log = LoggerFactory.getLogger(LeaderCalls.class);
  /** A call is cancelled this long before the election lease could expire. */
  static final Duration LEASE_MARGIN = Duration.ofMillis(500);

  private final ClusterVolumes volumes;
  private final Duration callTimeout;
  /** Calls under way: words (for status) to the call. */
  private final Map<String, CompletableFuture<?>> calls = new ConcurrentHashMap<>();

  LeaderCalls(ClusterVolumes volumes, Duration callTimeout) {
    this.volumes = volumes;
    this.callTimeout = callTimeout;
  }

  /** The calls under way now, in words. */
  Set<String> inFlight() {
    return Set.copyOf(calls.keySet());
  }

  /** The election lease is lost: every call under way is cancelled now. */
  void cancelAll() {
    calls.forEach((what, f) -> {
      if (f.cancel(true)) {
        log.warn("cluster controller: {} cancelled: the election lease is lost", what);
      }
    });
  }

  /**
   * Sends the call, if {@code l} is sure to be held, and waits for its answer until the call timeout, or until the
   * election lease could expire, whichever comes first (then the call is cancelled). The lease's end is looked at
   * again whenever the wait reaches it: a call may take longer than one lease period while the lease is renewed (a
   * cloud attach can take a minute), never past a lease that is no longer renewed.
   *
   * @throws NotLeading if the call was not sent, or the caller was interrupted (the call is cancelled)
   * @throws CallFailed with the plugin's failure as the cause, or a timeout or cancel
   */
  <T> T call(ClusterVolumes.Leadership l, String what, Supplier<CompletableFuture<T>> send)
      throws NotLeading, CallFailed {
    Duration left = volumes.leadershipLeft(l).minus(LEASE_MARGIN);
    if (left.isNegative() || left.isZero()) {
      log.info("cluster controller: {} not sent: plugin {}'s election lease is not sure to be held", what,
          l.pluginId());
      throw new NotLeading();
    }
    long start = System.nanoTime();
    long timeoutNanos = callTimeout.toNanos();
    CompletableFuture<T> f = send.get();
    calls.put(what, f);
    try {
      while (true) {
        long remaining = timeoutNanos - (System.nanoTime() - start);
        if (remaining <= 0) {
          f.cancel(true);
          throw new CallFailed("no answer within the call timeout of " + callTimeout.toMillis() + " ms (cancelled)",
              new TimeoutException());
        }
        if (left.isNegative() || left.isZero()) {
          f.cancel(true);
          throw new CallFailed("no answer within " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)
              + " ms, when plugin " + l.pluginId() + "'s election lease could expire (not renewed): cancelled",
              new TimeoutException());
        }
        try {
          return f.get(Math.min(remaining, left.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
          left = volumes.leadershipLeft(l).minus(LEASE_MARGIN); // renewed meanwhile, or not
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      f.cancel(true);
      throw new NotLeading();
    } catch (CancellationException e) {
      throw new CallFailed("cancelled (the election lease was lost)", e);
    } catch (ExecutionException e) {
      Throwable cause = Futures.unwrap(e);
      throw new CallFailed(cause.getMessage(), cause);
    } finally {
      calls.remove(what, f);
    }
  }

  /** The election lease is not sure to be held: no call was made (or the caller was interrupted). */
  static final class NotLeading extends Exception {
    private static final long serialVersionUID = 1L;
  }

  /** A call failed or was not answered in time; the cause says which. */
  static final class CallFailed extends Exception {
    private static final long serialVersionUID = 1L;

    CallFailed(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
