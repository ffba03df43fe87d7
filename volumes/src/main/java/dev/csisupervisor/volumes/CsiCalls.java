package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.Durations;
import dev.csisupervisor.common.ExponentialBackoff;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Makes one CSI call with the spec's retry rules: what the spec calls transient (UNAVAILABLE,
 * DEADLINE_EXCEEDED, ABORTED "operation pending for volume") and a plugin that cannot be reached
 * (restarting: refused, socket missing, connection lost) are retried with exponential backoff, a
 * bounded number of times; anything else fails at once as a {@link VolumeException} naming the
 * RPC, the code and the plugin's message. For an unpublish or unstage, NOT_FOUND means the volume
 * is gone and there is nothing left to undo (as Nomad treats it). Timers run on the scheduler;
 * nothing sleeps. Thread-safe.
 */
final class CsiCalls {
  private final ScheduledExecutorService scheduler;
  private final Random random;
  private final int maxAttempts;
  private final Duration initialBackoff;
  private final Duration maxBackoff;
  private final VolumeObserver observer;
  private final LongSupplier nanoTime;
  private final Duration operationDeadline;

  /** With the builder's scheduler, random source, retry bounds ({@code maxAttempts}, backoff), observer and clock. */
  CsiCalls(VolumeManager.Builder b) {
    this.scheduler = b.scheduler;
    this.random = b.random;
    this.maxAttempts = b.maxAttempts;
    this.initialBackoff = b.initialBackoff;
    this.maxBackoff = b.maxBackoff;
    this.observer = b.observer;
    this.nanoTime = b.nanoTime;
    this.operationDeadline = b.operationDeadline;
  }

  /** Told when an acting call's outcome is uncertain and it is sent again; must be quick. */
  @FunctionalInterface
  interface Uncertain {
    /**
     * @param message what happened, for the log and the caller: the RPC, its answer, how long it has been
     *     uncertain, and until when it is tried
     */
    void retrying(String message);
  }

  /** Whether a failure is worth trying again soon: the spec's transient codes, or a plugin restarting. */
  static boolean isTransient(CsiException e) {
    return dev.csisupervisor.client.CsiOutcome.uncertain(e);
  }

  static boolean isNotFound(CsiException e) {
    return dev.csisupervisor.client.CsiOutcome.notFound(e);
  }

  /**
   * When a failed call is sent again: NOT_FOUND taken as done (the undoing calls), a bound on attempts, a bound
   * on the time spent (the calls' own time plus the backoff waited), and who is told of each retry.
   */
  private record Rule(boolean notFoundIsDone, int maxAttempts, long deadlineNanos, Uncertain uncertain) {}

  /**
   * A call that acts (NodeStageVolume, NodePublishVolume, ControllerPublishVolume): a transient answer leaves
   * its outcome <em>uncertain</em> (a stage may be formatting a large disk), so the same call is sent again,
   * with backoff, until a final answer or the operation deadline ({@link VolumeManager.Builder#operationDeadline},
   * counted as the backoff waited plus the calls' own time); only a final error is a failure. Each retry is told
   * to {@code uncertain}.
   */
  <T> CompletableFuture<T> callUntilDeadline(String rpc, String what, Uncertain uncertain,
      Supplier<CompletableFuture<T>> call) {
    return run(rpc, what, new Rule(false, Integer.MAX_VALUE, operationDeadline.toNanos(), uncertain), call);
  }

  /**
   * @param rpc the RPC's short name, for messages and metrics
   * @param what what is being done, for the message ({@code "mount of vol-1 for alloc a1"})
   * @param notFoundIsDone whether NOT_FOUND counts as success (the undoing calls)
   */
  <T> CompletableFuture<T> call(String rpc, String what, boolean notFoundIsDone, Supplier<CompletableFuture<T>> call) {
    return run(rpc, what, new Rule(notFoundIsDone, maxAttempts, Long.MAX_VALUE, null), call);
  }

  private <T> CompletableFuture<T> run(String rpc, String what, Rule rule, Supplier<CompletableFuture<T>> call) {
    CompletableFuture<T> result = new CompletableFuture<>();
    attempt(rpc, what, rule, call, result, 1, 0, ExponentialBackoff.doubling(initialBackoff, maxBackoff, random));
    return result;
  }

  private <T> void attempt(String rpc, String what, Rule rule, Supplier<CompletableFuture<T>> call,
      CompletableFuture<T> result, int attempt, long spentNanos, Backoff backoff) {
    long start = nanoTime.getAsLong();
    CompletableFuture<T> f;
    try {
      f = call.get();
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
      return;
    }
    f.whenComplete((value, failure) -> {
      long took = nanoTime.getAsLong() - start;
      Duration latency = Duration.ofNanos(took);
      if (failure == null) {
        observer.rpcDone(rpc, "OK", latency);
        result.complete(value);
        return;
      }
      CsiException csi = CsiException.find(failure).orElse(null);
      if (csi == null) {
        observer.rpcDone(rpc, "UNKNOWN", latency);
        result.completeExceptionally(failure);
        return;
      }
      observer.rpcDone(rpc, csi instanceof CsiStatusException s ? s.code().name() : csi.kind().name(), latency);
      if (rule.notFoundIsDone() && isNotFound(csi)) {
        result.complete(null);
        return;
      }
      long spent = spentNanos + took;
      Duration wait = isTransient(csi) && attempt < rule.maxAttempts() ? backoff.next() : null;
      if (wait == null || spent + wait.toNanos() > rule.deadlineNanos()) {
        String suffix = wait != null ? " (uncertain for " + Durations.format(Duration.ofNanos(spent))
            + ", past the operation deadline of " + Durations.format(operationDeadline) + ")"
            : attempt > 1 ? " (" + attempt + " attempts)" : "";
        result.completeExceptionally(VolumeException.csi(what + suffix, rpc, csi));
        return;
      }
      if (rule.uncertain() != null) {
        rule.uncertain().retrying(rpc + " answered " + VolumeException.describe(csi) + ": its outcome is uncertain,"
            + " sent again (attempt " + (attempt + 1) + ", " + Durations.format(Duration.ofNanos(spent))
            + " so far, until " + Durations.format(operationDeadline) + ")");
      }
      try {
        scheduler.schedule(() -> attempt(rpc, what, rule, call, result, attempt + 1, spent + wait.toNanos(), backoff),
            wait.toNanos(), TimeUnit.NANOSECONDS);
      } catch (RejectedExecutionException e) {
        result.completeExceptionally(VolumeException.csi(what, rpc, csi));
      }
    });
  }
}
