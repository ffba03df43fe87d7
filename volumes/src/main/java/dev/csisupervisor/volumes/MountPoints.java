package dev.csisupervisor.volumes;

import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.NavigableSet;
import java.util.Objects;
import java.util.TreeSet;

/**
 * One reading of the mount table: the set of mount points (a path mounted over twice is one entry). Paths are
 * absolute and normalized; a bind mount of a file (a block volume's target) is a mount point like a directory.
 * Immutable and thread-safe.
 */
public final class MountPoints {
  private final NavigableSet<String> points;

  private MountPoints(NavigableSet<String> points) {
    this.points = points;
  }

  /** These mount points (absolute paths). */
  public static MountPoints of(Collection<Path> mountPoints) {
    TreeSet<String> s = new TreeSet<>();
    for (Path p : mountPoints) {
      s.add(key(p));
    }
    return new MountPoints(s);
  }

  /** From mount points already as strings (the reader's own, absolute). */
  static MountPoints ofStrings(Collection<String> mountPoints) {
    return new MountPoints(new TreeSet<>(mountPoints));
  }

  /** Whether {@code path} is a mount point now. */
  public boolean isMountPoint(Path path) {
    return points.contains(key(path));
  }

  /** The mount points strictly below {@code dir}, sorted. */
  public List<Path> below(Path dir) {
    String prefix = key(dir);
    String from = prefix.equals("/") ? "/" : prefix + "/";
    return points.tailSet(from, false).stream().takeWhile(p -> p.startsWith(from)).map(Path::of).toList();
  }

  /** Whether {@code dir} is a mount point or has one below it. */
  public boolean hasMountAtOrBelow(Path dir) {
    return isMountPoint(dir) || !below(dir).isEmpty();
  }

  /**
   * This reading with every mount point at or below {@code kernelRoot} written below {@code root} instead: the
   * kernel writes paths with their symlinks resolved, and the records name them below the CSI root as configured.
   */
  MountPoints seenFrom(Path kernelRoot, Path root) {
    String kernel = key(kernelRoot);
    String ours = key(root);
    if (kernel.equals(ours)) {
      return this;
    }
    TreeSet<String> s = new TreeSet<>();
    for (String p : points) {
      s.add(p.equals(kernel) ? ours : p.startsWith(kernel + "/") ? ours + p.substring(kernel.length()) : p);
    }
    return new MountPoints(s);
  }

  /** How many mount points. */
  public int size() {
    return points.size();
  }

  private static String key(Path p) {
    Objects.requireNonNull(p, "path");
    return p.toAbsolutePath().normalize().toString();
  }
}
