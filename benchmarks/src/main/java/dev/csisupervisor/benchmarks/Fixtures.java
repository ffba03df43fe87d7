package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateChange;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Shared test data: realistic registrations, and state directories (journal + checkpoint) pre-filled with N of them.
 *
 * <p>Filling a state file with 100 000 registrations one commit at a time would take minutes (one
 * WAL commit each), so a template is built once per size: the records are produced by a real
 * registry over an in-memory store (the registry's own encoding), then written into a journal store (closed cleanly: one checkpoint)
 * in large {@link dev.csisupervisor.state.StateStore#apply} batches. Templates are kept under
 * {@code benchmarks/target/bench-data/} (or {@code -Dbench.data=DIR}) and copied per trial, so a
 * benchmark that changes the store never changes the template. Not thread-safe: build templates
 * from one thread (the harnesses and JMH trial setups do).
 */
final class Fixtures {
  private static final Instant SINCE = Instant.parse("2025-01-01T00:00:00Z");

  private Fixtures() {}

  /**
   * A node plugin registration shaped like a real one (a few options, capabilities, topology):
   * about 400 bytes once encoded.
   */
  static PluginInfo plugin(String name, String allocId) {
    return plugin(PluginType.CSI_NODE, name, allocId);
  }

  static PluginInfo plugin(PluginType type, String name, String allocId) {
    Fingerprint fp = new Fingerprint(
        "ebs.csi.example.com",
        "1.32.0",
        Map.of("commit", "4f1c2d9e", "build", "2025-01-01"),
        Set.of("CONTROLLER_SERVICE", "VOLUME_ACCESSIBILITY_CONSTRAINTS"),
        type == PluginType.CSI_CONTROLLER ? Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME") : Set.of(),
        type == PluginType.CSI_NODE ? Set.of("STAGE_UNSTAGE_VOLUME", "GET_VOLUME_STATS", "EXPAND_VOLUME") : Set.of(),
        "i-0abc123def4567890",
        25,
        Map.of("topology.ebs.csi.example.com/zone", "eu-west-1a"));
    return new PluginInfo(
        type,
        name,
        "1.32.0",
        allocId,
        Path.of("/var/lib/csi-supervisor/plugins/node", name, "csi.sock"),
        Map.of("provider", "ebs.csi.example.com", "mount_point", "/var/lib/csi-supervisor/plugins/node/" + name,
            "container_mount_point", "/csi"),
        fp,
        PluginHealth.healthy(SINCE),
        false);
  }

  /** The name and alloc id of the i-th pre-filled registration. */
  static String name(int i) {
    return "plugin-" + i;
  }

  static String alloc(int i) {
    return "alloc-" + i + "-5d1c0e7a";
  }

  /** Where templates live: {@code -Dbench.data}, else {@code target/bench-data} under the working directory. */
  static Path dataDir() {
    String configured = System.getProperty("bench.data");
    return Path.of(configured != null ? configured : "target/bench-data").toAbsolutePath();
  }

  /**
   * A fresh copy of a state directory holding {@code size} registrations (names {@link #name},
   * allocs {@link #alloc}) in {@code target}, which must not exist or be empty.
   */
  static Path stateDirWith(int size, Path target) {
    Path template = template(size);
    try {
      // 0700, as the agent keeps its data directory (the store warns about anything more open).
      Files.createDirectories(target, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      try (Stream<Path> files = Files.walk(template)) {
        for (Path f : (Iterable<Path>) files::iterator) {
          String n = f.getFileName().toString();
          Path to = target.resolve(template.relativize(f).toString());
          if (Files.isDirectory(f)) {
            Files.createDirectories(to);
          } else if (!n.equals("lock") && !n.equals("COMPLETE")) {
            Files.copy(f, to, StandardCopyOption.REPLACE_EXISTING);
          }
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot copy state template " + template + " to " + target, e);
    }
    return target;
  }

  /** The template directory for {@code size}, built if it does not exist yet. */
  static Path template(int size) {
    Path dir = dataDir().resolve("state-" + size);
    Path done = dir.resolve("COMPLETE");
    if (Files.exists(done)) {
      return dir;
    }
    long start = System.nanoTime();
    deleteRecursively(dir);
    // Records as the registry itself encodes them.
    InMemoryStateStore memory = new InMemoryStateStore();
    try (PluginRegistry registry = PluginRegistry.builder().stateStore(memory).build()) {
      for (int i = 0; i < size; i++) {
        registry.register(plugin(name(i), alloc(i)));
      }
    }
    List<StateChange> batch = new ArrayList<>();
    try (JournalStateStore store = JournalStateStore.open(dir)) {
      for (Map.Entry<String, byte[]> e : memory.loadAll().entrySet()) {
        batch.add(new StateChange.Put(e.getKey(), e.getValue()));
        if (batch.size() == 5_000) {
          store.apply(batch);
          batch.clear();
        }
      }
      store.apply(batch);
    }
    try {
      Files.writeString(done, size + " registrations\n");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    System.err.printf("built state template with %d registrations in %s in %.1f s%n", size, dir,
        (System.nanoTime() - start) / 1e9);
    return dir;
  }

  static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : (Iterable<Path>) walk.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot delete " + dir, e);
    }
  }
}
