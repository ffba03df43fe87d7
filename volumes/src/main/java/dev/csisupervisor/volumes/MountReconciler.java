package dev.csisupervisor.volumes;

import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
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
final class MountReconciler {
  private static final Logger log = LoggerFactory.getLogger(MountReconciler.class);

  private MountReconciler() {}

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
   * Mount points below {@code <csiRoot>/<type>/<plugin>/staging/} and {@code .../per-alloc/} that no record
   * names, nor lie below a path a record names (a mount inside a task's volume is the task's). Sorted.
   */
  static List<Path> orphans(Path csiRoot, Collection<VolumeRecord> records, MountPoints mounts) {
    Set<Path> known = knownPaths(records);
    TreeSet<Path> out = new TreeSet<>();
    for (Path dir : volumeDirectories(csiRoot, records)) {
      for (Path m : mounts.below(dir)) {
        if (!known.contains(m) && known.stream().noneMatch(m::startsWith)) {
          out.add(m);
        }
      }
    }
    return List.copyOf(out);
  }

  /**
   * Removes the empty directories below the plugins' {@code staging/} and {@code per-alloc/} directories that
   * no record names (what a crash or a forced unmount left); never a directory with a file or a mount in it.
   * The removed ones, deepest first.
   */
  static List<Path> removeEmptyOrphanDirectories(Path csiRoot, Collection<VolumeRecord> records, MountPoints mounts) {
    Set<Path> known = knownPaths(records);
    List<Path> removed = new ArrayList<>();
    for (Path base : volumeDirectories(csiRoot, records)) {
      if (!Files.isDirectory(base, LinkOption.NOFOLLOW_LINKS)) {
        continue;
      }
      List<Path> dirs;
      try (Stream<Path> walk = Files.walk(base, 3)) {
        dirs = walk.filter(d -> !d.equals(base) && Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS))
            .sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList();
      } catch (IOException | java.io.UncheckedIOException e) {
        log.debug("cannot walk {}: {}", base, e.toString());
        continue;
      }
      for (Path d : dirs) {
        boolean namedOrAbove = known.stream().anyMatch(k -> k.startsWith(d) || d.startsWith(k));
        if (namedOrAbove || mounts.hasMountAtOrBelow(d)) {
          continue;
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
    }
    return removed;
  }

  private static Set<Path> knownPaths(Collection<VolumeRecord> records) {
    Set<Path> known = new HashSet<>();
    records.forEach(r -> r.paths().forEach(p -> known.add(p.toAbsolutePath().normalize())));
    return known;
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
