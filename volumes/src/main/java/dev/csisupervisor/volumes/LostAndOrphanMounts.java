package dev.csisupervisor.volumes;

import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.io.IOException;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The journal against the kernel's mount table, the way the kubelet reconstructs its volumes after a restart:
 * what a record says is mounted and the table does not have is <em>lost</em> ({@link #markLost}); mount points
 * below the plugins' {@code staging/} and {@code per-alloc/} directories that no record names are
 * <em>orphans</em> ({@link #orphans}), reported and removed only on an operator's word; empty directories
 * there that no record names are removed ({@link #removeEmptyOrphanDirectories}). Stateless.
 */
final class LostAndOrphanMounts {
  private static final Logger log = LoggerFactory.getLogger(LostAndOrphanMounts.class);

  private LostAndOrphanMounts() {}

  /**
   * {@code r} with every publication whose target is not a mount point marked {@link AllocPhase#LOST}, and every
   * staging that is not a mount point marked {@link StageState#LOST} when it was one after its stage, or when
   * no publication of it is left mounted (a plugin that stages by bookkeeping alone is staged afresh then).
   * The same record if nothing is lost.
   */
  static VolumeRecord markLost(VolumeRecord r, MountPoints mounts) {
    VolumeRecord out = r;
    for (UsageRecord u : r.usages().values()) {
      UsageRecord nu = u;
      for (String alloc : u.allocsIn(AllocPhase.PUBLISHED)) {
        if (!mounts.isMountPoint(r.targetPath(alloc, u.usage()))) {
          nu = nu.withAlloc(alloc, AllocPhase.LOST);
        }
      }
      if (nu != u) {
        out = out.withUsage(nu);
      }
    }
    for (Map.Entry<String, Staging> e : r.stagings().entrySet()) {
      Staging s = e.getValue();
      List<UsageRecord> users = out.usersOf(e.getKey());
      if (s.state() == StageState.STAGED && !users.isEmpty() && !mounts.isMountPoint(r.stagingPath(e.getKey()))
          && (s.mounted() || users.stream().noneMatch(UsageRecord::hasPublished))) {
        out = out.withStaging(e.getKey(), s.withState(StageState.LOST));
      }
    }
    return out;
  }

  /** In words, what {@link #markLost} found lost in {@code after} (for the log, events and {@code recovered()}). */
  static String describeLost(VolumeRecord after) {
    List<String> parts = new ArrayList<>();
    for (UsageRecord u : after.usages().values()) {
      for (String alloc : u.allocsIn(AllocPhase.LOST)) {
        parts.add("alloc " + alloc + "'s target " + after.targetPath(alloc, u.usage()) + " is not mounted");
      }
    }
    after.stagings().forEach((name, s) -> {
      if (s.state() == StageState.LOST) {
        parts.add("staging " + after.stagingPath(name) + " is not mounted");
      }
    });
    return "volume " + after.key() + ": " + String.join("; ", parts) + " (a reboot, or an unmount behind the agent's"
        + " back): mounted again at the same paths once plugin " + after.pluginId() + " is ready";
  }

  /**
   * What the records name, gathered once for {@link #orphans} and {@link #removeEmptyOrphanDirectories}: every
   * staging and target path, every directory one of them lies in, and the {@code staging/} and
   * {@code per-alloc/} directories of every plugin directory under the CSI root and of every record.
   */
  record Known(Set<Path> paths, Set<Path> parents, Set<Path> volumeDirectories) {}

  static Known known(Path csiRoot, Collection<VolumeRecord> records) {
    Set<Path> paths = new HashSet<>();
    records.forEach(r -> r.paths().forEach(p -> paths.add(p.toAbsolutePath().normalize())));
    Set<Path> parents = new HashSet<>();
    for (Path k : paths) {
      for (Path q = k.getParent(); q != null && parents.add(q); q = q.getParent()) {
        // every directory a known path lies in, once
      }
    }
    return new Known(paths, parents, volumeDirectories(csiRoot, records));
  }

  /**
   * Mount points below {@code <csiRoot>/<type>/<plugin>/staging/} and {@code .../per-alloc/} that no record
   * names, nor lie below a path a record names (a mount inside a task's volume is the task's). Sorted.
   */
  static List<Path> orphans(Known known, MountPoints mounts) {
    TreeSet<Path> out = new TreeSet<>();
    for (Path dir : known.volumeDirectories()) {
      for (Path m : mounts.below(dir)) {
        if (!atOrBelowKnown(m, dir, known.paths())) {
          out.add(m);
        }
      }
    }
    return List.copyOf(out);
  }

  /** Whether {@code p} or one of its parents up to {@code top} is a known path: O(depth), not O(known). */
  private static boolean atOrBelowKnown(Path p, Path top, Set<Path> known) {
    for (Path q = p; q != null && q.startsWith(top); q = q.getParent()) {
      if (known.contains(q)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Removes the empty directories below the plugins' {@code staging/} and {@code per-alloc/} directories that
   * no record names (what a crash or a forced unmount left); never a directory with a file or a mount in it.
   * The removed ones, deepest first.
   */
  static List<Path> removeEmptyOrphanDirectories(Known known, MountPoints mounts) {
    List<Path> removed = new ArrayList<>();
    for (Path base : known.volumeDirectories()) {
      if (Files.isDirectory(base, LinkOption.NOFOLLOW_LINKS)) {
        sweep(base, 3, known.paths(), known.parents(), mounts, removed);
      }
    }
    return removed;
  }

  /**
   * Below {@code dir}: what a record names is left with all it holds, what a record's path lies in is looked
   * into, anything else is a tree no record knows, whose empty directories go. Reads directories without a
   * stat of what they hold (a node with 10 000 volumes has 30 000 directories here).
   */
  private static void sweep(Path dir, int depth, Set<Path> known, Set<Path> aboveKnown, MountPoints mounts,
      List<Path> removed) {
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path e : entries) {
        if (known.contains(e)) {
          continue;
        }
        if (aboveKnown.contains(e)) {
          if (depth > 1) {
            sweep(e, depth - 1, known, aboveKnown, mounts, removed);
          }
          continue;
        }
        removeEmptyTree(e, depth - 1, mounts, removed);
      }
    } catch (IOException | DirectoryIteratorException e) {
      log.debug("cannot read {}: {}", dir, e.toString());
    }
  }

  /** Removes {@code d} and the directories in it, deepest first, if they are empty: never a file or a mount. */
  private static void removeEmptyTree(Path d, int depth, MountPoints mounts, List<Path> removed) {
    if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS) || mounts.hasMountAtOrBelow(d)) {
      return;
    }
    if (depth > 0) {
      try (DirectoryStream<Path> entries = Files.newDirectoryStream(d)) {
        for (Path e : entries) {
          removeEmptyTree(e, depth - 1, mounts, removed);
        }
      } catch (IOException | DirectoryIteratorException e) {
        log.debug("cannot read {}: {}", d, e.toString());
        return;
      }
    }
    try {
      Files.delete(d);
      removed.add(d);
    } catch (DirectoryNotEmptyException e) {
      // something is in it: not ours to remove
    } catch (IOException e) {
      log.debug("left {}: {}", d, e.toString());
    }
  }

  /** {@code staging/} and {@code per-alloc/} of every plugin directory under the CSI root, and of every record's. */
  private static Set<Path> volumeDirectories(Path csiRoot, Collection<VolumeRecord> records) {
    Set<Path> pluginDirs = new TreeSet<>();
    records.forEach(r -> pluginDirs.add(r.pluginDir()));
    try (Stream<Path> types = Files.list(csiRoot)) {
      for (Path type : types.filter(Files::isDirectory).toList()) {
        try (Stream<Path> ids = Files.list(type)) {
          ids.filter(Files::isDirectory).forEach(pluginDirs::add);
        }
      }
    } catch (IOException | java.io.UncheckedIOException e) {
      log.debug("cannot list {}: {}", csiRoot, e.toString());
    }
    Set<Path> out = new TreeSet<>();
    for (Path d : pluginDirs) {
      out.add(d.resolve("staging"));
      out.add(d.resolve("per-alloc"));
    }
    return out;
  }
}
