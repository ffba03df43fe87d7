package dev.csisupervisor.volumes;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * What a task runner calls for a task that uses volumes, next to the plugin supervisor's hook:
 * {@link #prestart} mounts the task's claims and returns the paths to bind into the task;
 * {@link #stop} unmounts them. Both are idempotent (a restarted task's prestart returns the same
 * paths and calls nothing). Thread-safe; the futures complete as the manager's do.
 */
public final class VolumeTaskHook {
  private final VolumeManager manager;

  public VolumeTaskHook(VolumeManager manager) {
    this.manager = Objects.requireNonNull(manager, "manager");
  }

  /**
   * Mounts every claim (all for the same allocation), in parallel. If one fails, the ones that
   * succeeded are unmounted again and the future fails with the first failure: a task starts with
   * all its volumes or none.
   *
   * @param claims by the name the task knows the volume by
   * @return by the same names, where each volume is mounted on the node
   * @throws IllegalArgumentException if the claims name more than one allocation
   */
  public CompletableFuture<Map<String, Path>> prestart(Map<String, VolumeClaim> claims) {
    Objects.requireNonNull(claims, "claims");
    if (claims.values().stream().map(VolumeClaim::allocId).distinct().count() > 1) {
      throw new IllegalArgumentException("claims must all be for one allocation, got allocs "
          + claims.values().stream().map(VolumeClaim::allocId).distinct().sorted().toList());
    }
    Map<String, CompletableFuture<MountedVolume>> mounts = new LinkedHashMap<>();
    claims.forEach((name, claim) -> mounts.put(name, manager.mount(claim)));
    return CompletableFuture.allOf(mounts.values().toArray(CompletableFuture[]::new))
        .handle((ok, failure) -> failure)
        .thenCompose(failure -> {
          if (failure == null) {
            Map<String, Path> paths = new LinkedHashMap<>();
            mounts.forEach((name, f) -> paths.put(name, f.join().targetPath()));
            return CompletableFuture.completedFuture(paths);
          }
          List<CompletableFuture<Void>> undo = new ArrayList<>();
          mounts.forEach((name, f) -> {
            if (!f.isCompletedExceptionally()) {
              MountedVolume m = f.join();
              undo.add(manager.unmount(m.pluginId(), m.volumeId(), m.allocId()));
            }
          });
          return CompletableFuture.allOf(undo.toArray(CompletableFuture[]::new)).handle((x, e) -> null)
              .thenCompose(x -> CompletableFuture.<Map<String, Path>>failedFuture(failure));
        });
  }

  /**
   * Unmounts every claim of the task. The future completes when all are unmounted; an unmount whose
   * plugin is away stays pending in the manager (and this future waits for it).
   */
  public CompletableFuture<Void> stop(Iterable<VolumeClaim> claims) {
    Objects.requireNonNull(claims, "claims");
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (VolumeClaim c : claims) {
      all.add(manager.unmount(c.pluginId(), c.volumeId(), c.allocId()));
    }
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
  }
}
