package dev.csisupervisor.volumes;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The kernel's mount table for tests that run without root: a set of mount points that {@link FaultyClient}
 * changes as a mounting driver would (a stage or publish that succeeded mounts its path, an unstage or unpublish
 * that succeeded unmounts it, unless the test says the plugin leaves it), and that a test changes behind the
 * manager's back ({@link #lose}, {@link #reboot}, {@link #mount} of an orphan). Thread-safe.
 */
final class FakeMountTable implements MountTable {
  private final Set<Path> mounted = ConcurrentHashMap.newKeySet();
  /** Busy mount points: an unmount by the plugin leaves them (the plugin says done anyway). */
  private final Set<Path> pinned = ConcurrentHashMap.newKeySet();
  /** Paths the agent itself unmounted, in order. */
  final List<Path> agentUnmounts = new CopyOnWriteArrayList<>();
  volatile IOException readFailure;
  /** Whether {@link #read} writes paths as the kernel does: every symlink resolved. */
  volatile boolean kernelPaths;
  volatile IOException unmountFailure;

  void mount(Path p) {
    mounted.add(p.toAbsolutePath().normalize());
  }

  /** Unmounted behind the manager's back (by hand, or a plugin's own clean-up). */
  void lose(Path p) {
    mounted.remove(p.toAbsolutePath().normalize());
  }

  /** {@code p} stays mounted whatever the plugin does, until {@link #unpin}. */
  void pin(Path p) {
    pinned.add(p.toAbsolutePath().normalize());
  }

  void unpin(Path p) {
    pinned.remove(p.toAbsolutePath().normalize());
  }

  /** A plugin's unmount of {@code p}: done unless it is pinned. */
  void pluginUnmounted(Path p) {
    if (!pinned.contains(p.toAbsolutePath().normalize())) {
      lose(p);
    }
  }

  /** Every mount is gone, as after a power cut. */
  void reboot() {
    mounted.clear();
  }

  boolean isMounted(Path p) {
    return mounted.contains(p.toAbsolutePath().normalize());
  }

  Set<Path> all() {
    return Set.copyOf(mounted);
  }

  @Override
  public MountPoints read() throws IOException {
    IOException f = readFailure;
    if (f != null) {
      throw f;
    }
    return MountPoints.of(kernelPaths ? mounted.stream().map(HostMounts::resolved).toList() : mounted);
  }

  @Override
  public void unmount(Path path) throws IOException {
    IOException f = unmountFailure;
    if (f != null) {
      throw f;
    }
    agentUnmounts.add(path);
    lose(path);
  }
}
