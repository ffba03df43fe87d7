package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** Test helpers on a store's files. */
final class StateFiles {
  private StateFiles() {}

  /**
   * Copies the files of an OPEN store to {@code <target>/state} as they are now: what a kill -9 at this instant
   * would leave (every acknowledged write reached the page cache before it was acknowledged).
   */
  static Path crashCopy(Path dataDir, Path target) throws IOException {
    Path from = dataDir.resolve(JournalStateStore.DIRECTORY);
    Path to = Files.createDirectories(target.resolve(JournalStateStore.DIRECTORY));
    for (Path f : list(from)) {
      if (Files.isRegularFile(f) && !f.getFileName().toString().equals("lock")) {
        Files.copy(f, to.resolve(f.getFileName()));
      }
    }
    return target;
  }

  static List<Path> list(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }

  static List<String> names(Path dataDir) throws IOException {
    return list(dataDir.resolve(JournalStateStore.DIRECTORY)).stream().map(p -> p.getFileName().toString()).toList();
  }

  static List<Path> segments(Path dataDir) throws IOException {
    return list(dataDir.resolve(JournalStateStore.DIRECTORY)).stream()
        .filter(p -> p.getFileName().toString().startsWith("journal-")).toList();
  }

  /** Every file's bytes, by name, to show that something left the files untouched. */
  static Map<String, byte[]> snapshot(Path dataDir) throws IOException {
    Map<String, byte[]> result = new HashMap<>();
    for (Path f : list(dataDir.resolve(JournalStateStore.DIRECTORY))) {
      if (Files.isRegularFile(f) && !f.getFileName().toString().equals("lock")) {
        result.put(f.getFileName().toString(), Files.readAllBytes(f));
      }
    }
    return result;
  }

  static Map<String, String> strings(Map<String, byte[]> records) {
    Map<String, String> result = new HashMap<>();
    records.forEach((k, v) -> result.put(k, new String(v, java.nio.charset.StandardCharsets.UTF_8)));
    return result;
  }
}
