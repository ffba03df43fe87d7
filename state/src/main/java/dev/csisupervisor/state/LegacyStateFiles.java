package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;

/**
 * The store of earlier versions: {@code <dataDir>/registry.db} and its mirror {@code registry.db.mirror}, two
 * MapDB files committed one after the other, each with MapDB's write-ahead-log files ({@code <file>.wal.*})
 * present only while a commit was in progress. Read once, to migrate; never written.
 */
final class LegacyStateFiles {
  static final String FILE_NAME = "registry.db";
  private static final String MAP_NAME = "records";

  private final Path file;
  private final Path mirror;

  LegacyStateFiles(Path dataDir) {
    this.file = dataDir.resolve(FILE_NAME);
    this.mirror = dataDir.resolve(FILE_NAME + ".mirror");
  }

  boolean present() {
    return Files.exists(file) || Files.exists(mirror);
  }

  /**
   * Reads the records of the copy to trust, as the old store chose on open: a file that was not in the middle of
   * a commit (no log files) and reads back, the state file first; else whichever reads back.
   *
   * @throws StateStoreException naming both files if neither reads back
   */
  Map<String, byte[]> read() throws IOException {
    Map<String, byte[]> primary = null;
    Map<String, byte[]> secondary = null;
    List<String> problems = new ArrayList<>();
    boolean primaryClean = false;
    boolean mirrorClean = false;
    for (Path p : List.of(file, mirror)) {
      if (!Files.exists(p)) {
        problems.add(p + " is missing");
        continue;
      }
      boolean clean = logFiles(p).isEmpty();
      try {
        Map<String, byte[]> records = readMap(p);
        if (p == file) {
          primary = records;
          primaryClean = clean;
        } else {
          secondary = records;
          mirrorClean = clean;
        }
      } catch (RuntimeException | AssertionError | StackOverflowError e) {
        problems.add(p + ": " + StateDirectory.describe(e));
      }
    }
    if (primary != null && primaryClean) {
      return primary;
    }
    if (secondary != null && mirrorClean) {
      return secondary;
    }
    if (primary != null) {
      return primary;
    }
    if (secondary != null) {
      return secondary;
    }
    throw new StateStoreException("neither legacy state file can be read back: " + String.join("; ", problems));
  }

  private static Map<String, byte[]> readMap(Path p) {
    ContextClassLoader loader = ContextClassLoader.ensure();
    try {
      return readMapWithClassLoader(p);
    } finally {
      loader.restore();
    }
  }

  private static Map<String, byte[]> readMapWithClassLoader(Path p) {
    DB db = DBMaker.fileDB(p.toFile()).transactionEnable().fileLockDisable().make();
    try {
      Map<String, byte[]> records = new HashMap<>();
      for (Map.Entry<String, byte[]> e : db.hashMap(MAP_NAME, Serializer.STRING, Serializer.BYTE_ARRAY).open().entrySet()) {
        if (e.getKey() == null || e.getValue() == null || e.getKey().isBlank()) {
          throw new IllegalStateException("record " + records.size() + " has a null or blank key or a null value");
        }
        records.put(e.getKey(), e.getValue());
      }
      return records;
    } finally {
      db.close();
    }
  }

  /** Every file of the old store: both files, their log files, leftovers of rebuilds, the lock file. */
  List<Path> allFiles() throws IOException {
    List<Path> result = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(file.getParent(), FILE_NAME + "*")) {
      for (Path p : files) {
        if (!p.getFileName().toString().contains(".corrupt-")) { // files an operator was told to inspect: kept
          result.add(p);
        }
      }
    }
    return result;
  }

  private static List<Path> logFiles(Path p) throws IOException {
    List<Path> result = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(p.getParent(), p.getFileName() + ".wal*")) {
      files.forEach(result::add);
    }
    return result;
  }

  Path file() {
    return file;
  }
}
