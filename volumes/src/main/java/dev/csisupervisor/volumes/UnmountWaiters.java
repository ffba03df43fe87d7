package dev.csisupervisor.volumes;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The callers of {@code unmount} waiting for their allocation to be gone from a volume's record. Each allocation
 * is on its own: its waiter completes when <em>its</em> publication is gone, whatever other allocations of the
 * volume are doing; only the last user of a staging also waits for the unstage, and the last user of the volume
 * for the controller unpublish, which are part of its unmount. Futures complete outside the monitor.
 * Thread-safe (its own monitor).
 */
final class UnmountWaiters {
  private record Waiter(Optional<String> staging, CompletableFuture<Void> future) {}

  /** (volume, alloc) -> the futures waiting for it. */
  private final Map<VolumeKey, Map<String, List<Waiter>>> waiting = new HashMap<>();

  /** @param staging the name of the staging the allocation is published from, if it was known when asked */
  synchronized void add(VolumeKey key, String allocId, Optional<String> staging, CompletableFuture<Void> waiter) {
    waiting.computeIfAbsent(key, k -> new HashMap<>()).computeIfAbsent(allocId, k -> new ArrayList<>())
        .add(new Waiter(staging, waiter));
  }

  /** {@code waiter}'s allocation holds nothing of the volume: it is done at once. */
  void nothingToDo(VolumeKey key, String allocId, CompletableFuture<Void> waiter) {
    remove(key, allocId, waiter);
    waiter.complete(null);
  }

  /** {@code waiter}'s unmount could not start (its intent did not commit): it fails with {@code failure}. */
  void fail(VolumeKey key, String allocId, CompletableFuture<Void> waiter, Throwable failure) {
    remove(key, allocId, waiter);
    waiter.completeExceptionally(failure);
  }

  private void remove(VolumeKey key, String allocId, CompletableFuture<Void> waiter) {
    synchronized (this) {
      Map<String, List<Waiter>> byAlloc = waiting.get(key);
      if (byAlloc != null && byAlloc.containsKey(allocId)) {
        byAlloc.get(allocId).removeIf(w -> w.future() == waiter);
        if (byAlloc.get(allocId).isEmpty()) {
          byAlloc.remove(allocId);
        }
        if (byAlloc.isEmpty()) {
          waiting.remove(key);
        }
      }
    }
  }

  /**
   * {@code key}'s record is now {@code r} (null: gone): completes the waiters of every allocation it lacks whose
   * unstage and controller unpublish, if it was their last user, are done too.
   */
  void recordChanged(VolumeKey key, VolumeRecord r) {
    List<CompletableFuture<Void>> done = new ArrayList<>();
    synchronized (this) {
      Map<String, List<Waiter>> byAlloc = waiting.get(key);
      if (byAlloc == null) {
        return;
      }
      byAlloc.entrySet().removeIf(e -> {
        if (r != null && r.usageOf(e.getKey()).isPresent()) {
          return false;
        }
        e.getValue().removeIf(w -> {
          if (r == null || !r.hasTrailingWork(w.staging())) {
            done.add(w.future());
            return true;
          }
          return false;
        });
        return e.getValue().isEmpty();
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
      waiting.values().forEach(m -> m.values().forEach(l -> l.forEach(w -> all.add(w.future()))));
      waiting.clear();
    }
    all.forEach(w -> w.completeExceptionally(failure));
  }
}
