package dev.csisupervisor.volumes;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * One lane per volume: operations on a volume run one after another (CSI: at most one call in
 * flight per volume), operations on different volumes run at once. A lane is a chain of futures,
 * not a thread; an operation starts on the thread that finished the one before it (or the caller's,
 * when the lane is idle). Thread-safe.
 */
final class VolumeLanes {
  private static final CompletableFuture<Void> IDLE = CompletableFuture.completedFuture(null);

  private final Map<VolumeKey, CompletableFuture<Void>> tails = new HashMap<>(); // guarded by this

  /**
   * Runs {@code operation} after every operation submitted earlier for {@code key} has finished
   * (successfully or not); returns its result. An operation that throws fails its future.
   */
  <T> CompletableFuture<T> submit(VolumeKey key, Supplier<CompletableFuture<T>> operation) {
    CompletableFuture<T> result;
    CompletableFuture<Void> tail;
    synchronized (this) {
      CompletableFuture<Void> previous = tails.getOrDefault(key, IDLE);
      result = previous.thenCompose(ignored -> start(operation));
      tail = result.handle((r, e) -> null);
      tails.put(key, tail);
    }
    tail.thenRun(() -> {
      synchronized (this) {
        tails.remove(key, tail);
      }
    });
    return result;
  }

  /** How many volumes have an operation running or queued. */
  synchronized int busy() {
    return tails.size();
  }

  private static <T> CompletableFuture<T> start(Supplier<CompletableFuture<T>> operation) {
    try {
      return operation.get();
    } catch (RuntimeException | Error e) {
      return CompletableFuture.failedFuture(e);
    }
  }
}
