package dev.csisupervisor.volumes;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The callers of {@code unmount} waiting for their allocation to be gone from a volume's record, with nothing
 * of the volume left in flight (an unstage or a controller unpublish that follows the last unpublish is part of
 * the unmount). Futures complete outside the monitor. Thread-safe (its own monitor).
 */
final class UnmountWaiters {
  /** (volume, alloc) -> the futures waiting for it. */
  private final Map<VolumeKey, Map<String, List<CompletableFuture<Void>>>> waiting = new HashMap<>();

  synchronized void add(VolumeKey key, String allocId, CompletableFuture<Void> waiter) {
    waiting.computeIfAbsent(key, k -> new HashMap<>()).computeIfAbsent(allocId, k -> new ArrayList<>()).add(waiter);
  }

  /** {@code waiter}'s unmount could not start (its intent did not commit): it fails with {@code failure}. */
  void fail(VolumeKey key, String allocId, CompletableFuture<Void> waiter, Throwable failure) {
    synchronized (this) {
      Map<String, List<CompletableFuture<Void>>> byAlloc = waiting.get(key);
      if (byAlloc != null && byAlloc.containsKey(allocId)) {
        byAlloc.get(allocId).remove(waiter);
        if (byAlloc.get(allocId).isEmpty()) {
          byAlloc.remove(allocId);
        }
        if (byAlloc.isEmpty()) {
          waiting.remove(key);
        }
      }
    }
    waiter.completeExceptionally(failure);
  }

  /** {@code key}'s record is now {@code r} (null: gone): completes the waiters of every allocation it lacks. */
  void recordChanged(VolumeKey key, VolumeRecord r) {
    List<CompletableFuture<Void>> done = new ArrayList<>();
    synchronized (this) {
      Map<String, List<CompletableFuture<Void>>> byAlloc = waiting.get(key);
      if (byAlloc == null) {
        return;
      }
      byAlloc.entrySet().removeIf(e -> {
        if (r == null || (r.usageOf(e.getKey()).isEmpty() && !r.hasWork())) {
          done.addAll(e.getValue());
          return true;
        }
        return false;
      });
      if (byAlloc.isEmpty()) {
        waiting.remove(key);
      }
    }
    done.forEach(f -> f.complete(null));
  }

  /** Fails every waiter with {@code failure} (the manager closes). */
  void failAll(Throwable failure) {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    synchronized (this) {
      waiting.values().forEach(m -> m.values().forEach(all::addAll));
      waiting.clear();
    }
    all.forEach(w -> w.completeExceptionally(failure));
  }
}
