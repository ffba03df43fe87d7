package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The records against the kernel's mount table, as a whole (the kubelet's reconstruction): at start, before any
 * plugin is followed, what the table lost is marked LOST and orphans are reported ({@link #atStart}); on an
 * operator's request, mounts no record names are listed or unmounted ({@link #collectOrphans}). Reads the records;
 * changes them only at start, before any lane runs. Thread-safe.
 */
final class MountTableAudit {
  private static final Logger log = LoggerFactory.getLogger(MountTableAudit.class);

  private final HostMounts mounts;
  private final Map<VolumeKey, VolumeRecord> records;
  private final Path csiRoot;

  MountTableAudit(HostMounts mounts, Map<VolumeKey, VolumeRecord> records, Path csiRoot) {
    this.mounts = mounts;
    this.records = records;
    this.csiRoot = csiRoot;
  }

  /**
   * At start: every record against the mount table. What it lost is marked so (committed to {@code store} in one
   * group, on this thread) and mounted again once its plugin is ready; orphan mounts are reported, empty
   * directories no record names removed.
   *
   * @return what was found, in words (for {@link VolumeManager#recovered})
   */
  List<String> atStart(StateStore store) {
    Optional<MountPoints> table;
    try {
      table = mounts.read();
    } catch (VolumeException e) {
      log.error("VOLUMES NOT CHECKED against the mount table: {}; recorded paths are checked again before "
          + "they are handed back", e.getMessage());
      return List.of("mount table not read at start: " + e.getMessage());
    }
    if (table.isEmpty()) {
      return List.of();
    }
    MountPoints m = table.get();
    List<String> found = new ArrayList<>();
    long t0 = System.nanoTime();
    found.addAll(markLost(store, m));
    long t1 = System.nanoTime();
    LostAndOrphanMounts.Known known = LostAndOrphanMounts.known(csiRoot, records.values());
    for (Path orphan : LostAndOrphanMounts.orphans(known, m)) {
      String line = "orphan mount " + orphan + ": no volume record names it; csi-agent volume gc lists it, "
          + "csi-agent volume gc --yes unmounts it";
      log.warn("{}", line);
      found.add(line);
    }
    long t2 = System.nanoTime();
    for (Path d : LostAndOrphanMounts.removeEmptyOrphanDirectories(known, m)) {
      log.info("removed empty directory {}: no volume record names it", d);
    }
    log.debug("checked {} volume record(s) against {} mount point(s): lost {} ms, orphans {} ms, empty directories {} ms",
        records.size(), m.size(), (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, (System.nanoTime() - t2) / 1_000_000);
    return found;
  }

  /** The records whose mounts the table lost, marked LOST: committed, then in memory; each in words. */
  private List<String> markLost(StateStore store, MountPoints m) {
    Map<VolumeKey, VolumeRecord> lost = new TreeMap<>(Comparator.comparing(VolumeKey::toString));
    for (VolumeRecord r : records.values()) {
      VolumeRecord marked = LostAndOrphanMounts.markLost(r, m);
      if (!marked.equals(r)) {
        lost.put(r.key(), marked);
      }
    }
    if (lost.isEmpty()) {
      return List.of();
    }
    List<StateChange> changes = lost.values().stream()
        .<StateChange>map(r -> new StateChange.Put(r.key().storeKey(), VolumeRecordCodec.encode(r))).toList();
    try {
      store.apply(changes); // at start, on the builder's thread: it waits anyway (no hand-off)
    } catch (RuntimeException e) {
      log.error("{} volume(s) found lost could not be marked so ({}); they are checked again before their paths "
          + "are handed back", lost.size(), e.getMessage());
      return List.of();
    }
    records.putAll(lost);
    List<String> lines = new ArrayList<>();
    for (VolumeRecord r : lost.values()) {
      String line = LostAndOrphanMounts.describeLost(r);
      log.warn("MOUNT LOST: {}", line);
      lines.add(line);
    }
    return lines;
  }

  /** The mounts below the CSI root no record names; with {@code remove}, unmounted by the agent. */
  CompletableFuture<List<OrphanMount>> collectOrphans(boolean remove) {
    Optional<MountPoints> table;
    try {
      table = mounts.read();
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (table.isEmpty()) {
      return CompletableFuture.completedFuture(List.of());
    }
    List<Path> found = LostAndOrphanMounts.orphans(LostAndOrphanMounts.known(csiRoot, records.values()), table.get());
    if (!remove) {
      return CompletableFuture.completedFuture(
          found.stream().map(p -> new OrphanMount(p, false, Optional.empty())).toList());
    }
    List<CompletableFuture<OrphanMount>> done = found.stream().map(p -> mounts.unmount(p).handle((x, e) -> {
      if (e == null) {
        log.warn("unmounted orphan mount {} (no volume record named it)", p);
        return new OrphanMount(p, true, Optional.empty());
      }
      return new OrphanMount(p, false, Optional.of(Futures.unwrap(e).getMessage()));
    })).toList();
    return CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).thenApply(x -> {
      try {
        LostAndOrphanMounts.removeEmptyOrphanDirectories(LostAndOrphanMounts.known(csiRoot, records.values()),
            mounts.read().orElseThrow());
      } catch (VolumeException e) {
        log.warn("empty orphan directories not removed: {}", e.getMessage());
      }
      return done.stream().map(CompletableFuture::join).toList();
    });
  }
}
