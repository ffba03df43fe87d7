package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateStoreContractTest.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MapDbStateStoreTest extends StateStoreContractTest {

  private static final Clock FIXED = Clock.fixed(Instant.parse("2024-01-02T03:04:05.678Z"), ZoneOffset.UTC);
  private static final String QUARANTINE_NAME = "registry.db.corrupt-20240102T030405.678Z";

  @TempDir Path tmp;

  @Override
  protected StateStore newStore() {
    return MapDbStateStore.open(tmp.resolve("data"));
  }

  @Override
  protected StateStore reopen(StateStore store) {
    store.close();
    return MapDbStateStore.open(tmp.resolve("data"));
  }

  private Path dataDir() {
    return tmp.resolve("data");
  }

  private Path dbFile() {
    return dataDir().resolve("registry.db");
  }

  private Path mirrorFile() {
    return dataDir().resolve("registry.db.mirror");
  }

  private static MapDbStateStore.Options opts(boolean strict) {
    return MapDbStateStore.Options.defaults().withStrict(strict).withClock(FIXED);
  }

  /** Writes 50 records into the store, closes it and returns the file's bytes. */
  private byte[] writeGoodFile() throws IOException {
    for (int i = 0; i < 50; i++) {
      store.put("key-" + i, bytes("value-" + i + "-".repeat(i * 7)));
    }
    store.close();
    return Files.readAllBytes(dbFile());
  }

  // ---- restore reads ----

  @Test
  void firstLoadAllAfterOpen_servesTheRecordsOpenReadBack_andLaterReadsSeeChanges() {
    store.put("a", bytes("1"));
    store.put("b", bytes("2"));
    store = reopen(store);

    Map<String, byte[]> first = store.loadAll();
    assertEquals(2, first.size());
    assertArrayEquals(bytes("1"), first.get("a"));
    first.get("a")[0] = 'x'; // the caller owns what it was handed
    first.remove("b");

    Map<String, byte[]> second = store.loadAll();
    assertEquals(2, second.size());
    assertArrayEquals(bytes("1"), second.get("a"));

    store = reopen(store);
    store.delete("b");
    store.put("c", bytes("3"));
    Map<String, byte[]> afterChanges = store.loadAll();
    assertEquals(List.of("a", "c"), afterChanges.keySet().stream().sorted().toList());
  }

  // ---- files, modes, locking ----

  @Test
  void open_createsDataDirectory0700_stateFileAndMirror0600_lockFile0600() throws IOException {
    assertEquals(dbFile(), ((MapDbStateStore) store).file());
    assertEquals(mirrorFile(), ((MapDbStateStore) store).mirrorFile());
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dataDir())));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dbFile())));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(mirrorFile())));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dataDir().resolve("registry.db.lock"))));
  }

  @Test
  void reopen_tightensLoosePermissionsOnStateFile() throws IOException {
    store.put("a", bytes("1"));
    store.close();
    Files.setPosixFilePermissions(dbFile(), PosixFilePermissions.fromString("rw-r--r--"));
    store = MapDbStateStore.open(dataDir());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dbFile())));
  }

  @Test
  void secondOpenInSameProcess_failsFastWithLockedError() {
    StateFileLockedException e = assertTimeoutPreemptively(Duration.ofSeconds(5),
        () -> assertThrows(StateFileLockedException.class, () -> MapDbStateStore.open(dataDir())));
    assertTrue(e.getMessage().contains("state file " + dbFile() + " is locked by another process"), e.getMessage());
    assertEquals(dbFile(), e.file());
    store.put("still", bytes("works"));
    assertArrayEquals(bytes("works"), store.get("still").orElseThrow());
  }

  @Test
  void closeReleasesLock() {
    store.put("a", bytes("1"));
    store.close();
    store = MapDbStateStore.open(dataDir());
    assertArrayEquals(bytes("1"), store.get("a").orElseThrow());
  }

  @Test
  void openWhileAnotherProcessHoldsFile_failsFast_andKillReleasesLock() throws Exception {
    store.close();
    Process child = new ProcessBuilder(javaBin(), "-cp", System.getProperty("java.class.path"),
        LockHolderMain.class.getName(), dataDir().toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("LOCKED", assertTimeoutPreemptively(Duration.ofSeconds(30), out::readLine));
      StateFileLockedException e = assertTimeoutPreemptively(Duration.ofSeconds(5),
          () -> assertThrows(StateFileLockedException.class, () -> MapDbStateStore.open(dataDir())));
      assertTrue(e.getMessage().contains("is locked by another process"), e.getMessage());
    } finally {
      child.destroyForcibly();
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    store = MapDbStateStore.open(dataDir(), opts(true));
    assertTrue(new String(store.get("held-by").orElseThrow(), StandardCharsets.UTF_8).startsWith("pid "));
  }

  @Test
  void dataDirectoryThatIsAFile_isClearError() throws IOException {
    Path notADir = Files.writeString(tmp.resolve("file"), "x");
    StateStoreException e = assertThrows(StateStoreException.class, () -> MapDbStateStore.open(notADir));
    assertTrue(e.getMessage().contains(notADir.toString()) && e.getMessage().contains("not a directory"), e.getMessage());
  }

  @Test
  void stateFileThatIsADirectory_isClearError_neverQuarantined() throws IOException {
    store.close();
    Files.delete(dbFile());
    Files.createDirectory(dbFile());
    StateStoreException e = assertThrows(StateStoreException.class, () -> MapDbStateStore.open(dataDir(), opts(false)));
    assertTrue(e.getMessage().contains("not a regular file"), e.getMessage());
    assertTrue(Files.isDirectory(dbFile()));
    assertFalse(Files.exists(dataDir().resolve(QUARANTINE_NAME)));
  }

  @Test
  void customFileName_isUsed() {
    store.close();
    store = MapDbStateStore.open(dataDir(), MapDbStateStore.Options.defaults().withFileName("other.db"));
    store.put("a", bytes("1"));
    assertEquals(dataDir().resolve("other.db"), ((MapDbStateStore) store).file());
    assertTrue(Files.exists(dataDir().resolve("other.db")));
  }

  @Test
  void invalidOptions_nameTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> MapDbStateStore.Options.defaults().withFileName("../escape.db"));
    assertTrue(e.getMessage().contains("fileName") && e.getMessage().contains("../escape.db"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> MapDbStateStore.Options.defaults().withClock(null));
    assertTrue(e.getMessage().contains("clock"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> MapDbStateStore.open(null));
    assertTrue(e.getMessage().contains("dataDir"), e.getMessage());
  }

  // ---- bad state files ----

  @Test
  void truncatedFileAndMirror_areMovedAsideWithTheirBytes_andEmptyStoreOpens() throws IOException {
    byte[] good = writeGoodFile();
    byte[] truncated = Arrays.copyOf(good, good.length / 2);
    Files.write(dbFile(), truncated);
    byte[] truncatedMirror = Arrays.copyOf(Files.readAllBytes(mirrorFile()), 4096);
    Files.write(mirrorFile(), truncatedMirror);

    MapDbStateStore opened = MapDbStateStore.open(dataDir(), opts(false));
    store = opened;
    Path moved = dataDir().resolve(QUARANTINE_NAME);
    assertEquals(moved, opened.quarantinedFile().orElseThrow());
    assertArrayEquals(truncated, Files.readAllBytes(moved));
    assertArrayEquals(truncatedMirror, Files.readAllBytes(dataDir().resolve(QUARANTINE_NAME + ".mirror")));
    assertTrue(store.loadAll().isEmpty());
    store.put("fresh", bytes("1"));
    store = reopen(store);
    assertEquals(List.of("fresh"), List.copyOf(store.loadAll().keySet()));
    assertTrue(((MapDbStateStore) store).quarantinedFile().isEmpty());
  }

  @Test
  void truncatedFileAndMirror_inStrictMode_failNamingBoth_andAreLeftUntouched() throws IOException {
    byte[] good = writeGoodFile();
    byte[] truncated = Arrays.copyOf(good, 4096);
    Files.write(dbFile(), truncated);
    Files.write(mirrorFile(), truncated);

    StateFileCorruptException e = assertThrows(StateFileCorruptException.class, () -> MapDbStateStore.open(dataDir(), opts(true)));
    assertEquals(dbFile(), e.file());
    assertTrue(e.getMessage().contains(dbFile().toString()) && e.getMessage().contains("corrupt")
        && e.getMessage().contains("mirror " + mirrorFile()), e.getMessage());
    assertTrue(e.getCause() != null);
    assertArrayEquals(truncated, Files.readAllBytes(dbFile()));
    assertArrayEquals(truncated, Files.readAllBytes(mirrorFile()));
    try (Stream<Path> files = Files.list(dataDir())) {
      assertFalse(files.anyMatch(p -> p.getFileName().toString().contains("corrupt")));
    }
    // The failed strict open released its lock: a non-strict open can now quarantine the file.
    store = MapDbStateStore.open(dataDir(), opts(false));
    assertTrue(((MapDbStateStore) store).quarantinedFile().isPresent());
  }

  @ParameterizedTest(name = "strict={0}")
  @ValueSource(booleans = {false, true})
  void zeroByteFile_opensAsNewStore_inBothModes(boolean strict) throws IOException {
    store.close();
    Files.write(dbFile(), new byte[0]);
    store = MapDbStateStore.open(dataDir(), opts(strict));
    assertTrue(store.loadAll().isEmpty());
    assertTrue(((MapDbStateStore) store).quarantinedFile().isEmpty());
    store.put("a", bytes("1"));
    store = reopen(store);
    assertArrayEquals(bytes("1"), store.get("a").orElseThrow());
  }

  @Test
  void zeroByteFileWithWriteAheadLog_andNoMirror_isTreatedAsCorrupt_andBothAreMovedAside() throws IOException {
    store.close();
    Files.write(dbFile(), new byte[0]);
    Files.delete(mirrorFile());
    byte[] wal = bytes("some log bytes");
    Files.write(dataDir().resolve("registry.db.wal.0"), wal);

    assertThrows(StateFileCorruptException.class, () -> MapDbStateStore.open(dataDir(), opts(true)));
    store = MapDbStateStore.open(dataDir(), opts(false));
    assertEquals(dataDir().resolve(QUARANTINE_NAME), ((MapDbStateStore) store).quarantinedFile().orElseThrow());
    assertArrayEquals(wal, Files.readAllBytes(dataDir().resolve(QUARANTINE_NAME + ".wal.0")));
    assertFalse(Files.exists(dataDir().resolve("registry.db.wal.0")));
    assertTrue(store.loadAll().isEmpty());
  }

  @ParameterizedTest(name = "{0} random bytes")
  @ValueSource(ints = {1, 100, 5000, 100_000, 2_100_000})
  void randomBytes_areMovedAside_orRefusedInStrictMode(int size) throws IOException {
    store.close();
    byte[] garbage = new byte[size];
    new Random(size).nextBytes(garbage);
    Files.write(dbFile(), garbage);
    byte[] mirrorGarbage = new byte[size];
    new Random(-size).nextBytes(mirrorGarbage);
    Files.write(mirrorFile(), mirrorGarbage);

    StateFileCorruptException e = assertThrows(StateFileCorruptException.class, () -> MapDbStateStore.open(dataDir(), opts(true)));
    assertEquals(dbFile(), e.file());
    store = MapDbStateStore.open(dataDir(), opts(false));
    assertArrayEquals(garbage, Files.readAllBytes(dataDir().resolve(QUARANTINE_NAME)));
    assertArrayEquals(mirrorGarbage, Files.readAllBytes(dataDir().resolve(QUARANTINE_NAME + ".mirror")));
    assertTrue(store.loadAll().isEmpty());
  }

  @Test
  void secondQuarantineAtSameInstant_getsDistinctName() throws IOException {
    store.close();
    Files.write(dbFile(), bytes("garbage garbage garbage"));
    Files.write(mirrorFile(), bytes("mirror garbage"));
    MapDbStateStore.open(dataDir(), opts(false)).close();
    Files.write(dbFile(), bytes("more garbage garbage"));
    Files.write(mirrorFile(), bytes("more mirror garbage"));
    store = MapDbStateStore.open(dataDir(), opts(false));
    assertEquals(dataDir().resolve(QUARANTINE_NAME + "-1"), ((MapDbStateStore) store).quarantinedFile().orElseThrow());
    assertArrayEquals(bytes("garbage garbage garbage"), Files.readAllBytes(dataDir().resolve(QUARANTINE_NAME)));
  }

  /**
   * Damage inside the data area (not just the header): whatever MapDB makes of it, open either reads every
   * record back or treats the file as corrupt. It never throws anything else and never half-opens.
   */
  @Test
  void damagedRecords_eitherReadBackOrQuarantined_neverAnotherFailure() throws IOException {
    byte[] good = writeGoodFile();
    Random random = new Random(42);
    int quarantined = 0;
    int[] nonZero = java.util.stream.IntStream.range(64, good.length).filter(i -> good[i] != 0).toArray();
    for (int round = 0; round < 25; round++) {
      byte[] damaged = good.clone();
      int at = nonZero[random.nextInt(nonZero.length)];
      for (int i = at; i < Math.min(at + 16, damaged.length); i++) {
        damaged[i] = (byte) random.nextInt();
      }
      clearDataDir();
      Files.write(dbFile(), damaged);
      try {
        MapDbStateStore.open(dataDir(), opts(true)).close();
      } catch (StateFileCorruptException expected) {
        // fine: strict mode refuses it
      }
      try (MapDbStateStore s = MapDbStateStore.open(dataDir(), opts(false))) {
        if (s.quarantinedFile().isPresent()) {
          quarantined++;
          assertTrue(s.loadAll().isEmpty());
        } else {
          Map<String, byte[]> all = s.loadAll();
          all.values().forEach(v -> assertTrue(v != null));
        }
      }
    }
    assertTrue(quarantined > 0, "expected at least one damaged file to be unreadable");
  }

  // ---- the mirror ----

  private static final byte[] SOME_LOG_BYTES = bytes("write-ahead log of an interrupted commit");

  private void assertGoodRecords(Map<String, byte[]> all) {
    assertEquals(50, all.size());
    for (int i = 0; i < 50; i++) {
      assertArrayEquals(bytes("value-" + i + "-".repeat(i * 7)), all.get("key-" + i), "key-" + i);
    }
  }

  /** Opens the one file left in the data directory on its own (the other one deleted) and returns its records. */
  private Map<String, byte[]> recordsOfAlone(Path keep) throws IOException {
    Path other = keep.equals(dbFile()) ? mirrorFile() : dbFile();
    Files.delete(other);
    if (keep.equals(mirrorFile())) {
      Files.move(mirrorFile(), dbFile());
    }
    try (MapDbStateStore s = MapDbStateStore.open(dataDir(), opts(true))) {
      return s.loadAll();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"truncated", "random bytes", "zero bytes with a log", "missing"})
  void damagedStateFile_isRebuiltFromMirror_evenInStrictMode(String damage) throws IOException {
    byte[] good = writeGoodFile();
    damage(dbFile(), good, damage);

    store = MapDbStateStore.open(dataDir(), opts(true));
    assertGoodRecords(store.loadAll());
    assertTrue(((MapDbStateStore) store).quarantinedFile().isEmpty());
    assertFalse(Files.exists(dataDir().resolve("registry.db.wal.0")), "the stale log is gone");
    store.put("after", bytes("repair"));
    store.close();
    Map<String, byte[]> rebuilt = recordsOfAlone(dbFile());
    assertEquals(51, rebuilt.size());
    assertArrayEquals(bytes("repair"), rebuilt.get("after"));
    store = MapDbStateStore.open(dataDir());
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"truncated", "random bytes", "zero bytes with a log", "missing"})
  void damagedMirror_isRebuiltFromStateFile_evenInStrictMode(String damage) throws IOException {
    writeGoodFile();
    damage(mirrorFile(), Files.readAllBytes(mirrorFile()), damage);

    store = MapDbStateStore.open(dataDir(), opts(true));
    assertGoodRecords(store.loadAll());
    assertFalse(Files.exists(dataDir().resolve("registry.db.mirror.wal.0")), "the stale log is gone");
    store.close();
    assertGoodRecords(recordsOfAlone(mirrorFile()));
    store = MapDbStateStore.open(dataDir());
  }

  private void damage(Path file, byte[] good, String how) throws IOException {
    switch (how) {
      case "truncated" -> Files.write(file, Arrays.copyOf(good, good.length / 2));
      case "random bytes" -> {
        byte[] garbage = new byte[good.length];
        new Random(7).nextBytes(garbage);
        Files.write(file, garbage);
      }
      case "zero bytes with a log" -> {
        Files.write(file, new byte[0]);
        Files.write(file.resolveSibling(file.getFileName() + ".wal.0"), SOME_LOG_BYTES);
      }
      case "missing" -> Files.delete(file);
      default -> throw new IllegalArgumentException(how);
    }
  }

  /**
   * What a kill -9 in the middle of a MapDB commit leaves: MapDB has sealed its log and written part of the
   * commit into the state file, and never replays the log on open. The state file cannot be trusted, whether or not
   * it still reads back; the mirror, whose commit of the same change had not begun, holds every acknowledged change.
   */
  @Test
  void stateFileHalfWrittenByAnInterruptedCommit_isReplacedFromMirror() throws IOException {
    for (int i = 0; i < 40; i++) {
      store.put("key-" + i, bytes("value-" + i + "-".repeat(i * 11)));
    }
    Map<String, byte[]> acknowledged = store.loadAll();
    store.close();
    byte[] before = Files.readAllBytes(dbFile());
    byte[] mirrorBefore = Files.readAllBytes(mirrorFile());
    store = MapDbStateStore.open(dataDir());
    store.apply(List.of(new StateChange.Put("key-1", bytes("x".repeat(700))), new StateChange.Delete("key-2"),
        new StateChange.Put("key-new", bytes("y".repeat(3000))), new StateChange.Delete("key-30"),
        new StateChange.Put("key-7", bytes("z"))));
    Map<String, byte[]> committed = store.loadAll();
    store.close();
    byte[] after = Files.readAllBytes(dbFile());
    int length = Math.max(before.length, after.length);
    byte[] from = Arrays.copyOf(before, length);
    byte[] to = Arrays.copyOf(after, length);
    int[] changed = java.util.stream.IntStream.range(0, length).filter(i -> from[i] != to[i]).toArray();
    assertTrue(changed.length > 100, "the commit changed " + changed.length + " bytes");

    int unusableAlone = 0;
    for (int step = 1; step < 8; step++) {
      byte[] halfWritten = from.clone();
      for (int j = 0; j < changed.length * step / 8; j++) {
        halfWritten[changed[j]] = to[changed[j]];
      }
      clearDataDir();
      Files.write(dbFile(), halfWritten);
      Files.write(dataDir().resolve("registry.db.wal.0"), SOME_LOG_BYTES);
      Files.write(mirrorFile(), mirrorBefore);
      if (!readsBackAs(dbFile(), acknowledged) && !readsBackAs(dbFile(), committed)) {
        unusableAlone++;
      }

      try (MapDbStateStore s = MapDbStateStore.open(dataDir(), opts(true))) {
        assertRecords(acknowledged, s.loadAll(), "step " + step);
        s.apply(List.of(new StateChange.Put("key-3", bytes("after repair")), new StateChange.Put("key-99", bytes("new"))));
      }
      try (MapDbStateStore s = MapDbStateStore.open(dataDir(), opts(true))) {
        assertEquals(acknowledged.size() + 1, s.loadAll().size(), "step " + step);
        assertArrayEquals(bytes("after repair"), s.get("key-3").orElseThrow());
      }
    }
    // Without the mirror these files would have been lost or misread: the test above is not vacuous.
    assertTrue(unusableAlone > 0, "no half-written state file was unusable on its own");
    store = MapDbStateStore.open(dataDir());
  }

  /** A kill between the two commits: the state file has the change (unacknowledged, allowed), the mirror not yet. */
  @Test
  void mirrorOneCommitBehind_isCaughtUpFromStateFile() throws IOException {
    store.put("a", bytes("1"));
    store.close();
    byte[] mirrorBefore = Files.readAllBytes(mirrorFile());
    store = MapDbStateStore.open(dataDir());
    store.apply(List.of(new StateChange.Put("a", bytes("2")), new StateChange.Put("b", bytes("3"))));
    store.close();
    Files.write(mirrorFile(), mirrorBefore);

    store = MapDbStateStore.open(dataDir(), opts(true));
    assertArrayEquals(bytes("2"), store.get("a").orElseThrow());
    assertArrayEquals(bytes("3"), store.get("b").orElseThrow());
    store.close();
    Map<String, byte[]> mirror = recordsOfAlone(mirrorFile());
    assertEquals(2, mirror.size());
    assertArrayEquals(bytes("2"), mirror.get("a"));
    store = MapDbStateStore.open(dataDir());
  }

  /** A state file written before the store kept a mirror. */
  @Test
  void stateFileWithoutMirror_opensAndGetsOne() throws IOException {
    writeGoodFile();
    Files.delete(mirrorFile());
    store = MapDbStateStore.open(dataDir(), opts(true));
    assertGoodRecords(store.loadAll());
    assertTrue(Files.exists(mirrorFile()));
    store.close();
    assertGoodRecords(recordsOfAlone(mirrorFile()));
    store = MapDbStateStore.open(dataDir());
  }

  /** Neither file closed cleanly (only damage not left by a kill does this): the state file, if it reads back. */
  @Test
  void bothFilesWithLogs_stateFileThatReadsBack_isUsed() throws IOException {
    writeGoodFile();
    Files.write(dataDir().resolve("registry.db.wal.0"), SOME_LOG_BYTES);
    Files.write(mirrorFile(), bytes("garbage"));
    Files.write(dataDir().resolve("registry.db.mirror.wal.0"), SOME_LOG_BYTES);

    store = MapDbStateStore.open(dataDir(), opts(true));
    assertGoodRecords(store.loadAll());
    try (Stream<Path> files = Files.list(dataDir())) {
      assertEquals(List.of("registry.db", "registry.db.lock", "registry.db.mirror"),
          files.map(p -> p.getFileName().toString()).sorted().toList());
    }
  }

  @Test
  void leftoverRebuildFiles_areDeleted_andNeverUsed() throws IOException {
    writeGoodFile();
    Files.write(dataDir().resolve("registry.db.rebuild"), bytes("half a rebuild"));
    Files.write(dataDir().resolve("registry.db.rebuild.wal.0"), SOME_LOG_BYTES);
    Files.write(dataDir().resolve("registry.db.mirror.rebuild"), bytes("half a rebuild"));

    store = MapDbStateStore.open(dataDir(), opts(true));
    assertGoodRecords(store.loadAll());
    try (Stream<Path> files = Files.list(dataDir())) {
      assertEquals(List.of("registry.db", "registry.db.lock", "registry.db.mirror"),
          files.map(p -> p.getFileName().toString()).sorted().toList());
    }
  }

  private static boolean readsBackAs(Path file, Map<String, byte[]> expected) {
    try {
      org.mapdb.DB db = org.mapdb.DBMaker.fileDB(file.toFile()).readOnly().fileLockDisable().make();
      try {
        Map<String, byte[]> map = db.hashMap("records", org.mapdb.Serializer.STRING, org.mapdb.Serializer.BYTE_ARRAY).open();
        Map<String, byte[]> copy = new java.util.HashMap<>(map);
        if (copy.size() != expected.size()) {
          return false;
        }
        return expected.entrySet().stream().allMatch(e -> Arrays.equals(e.getValue(), copy.get(e.getKey())));
      } finally {
        db.close();
      }
    } catch (RuntimeException | Error e) {
      return false;
    }
  }

  private static void assertRecords(Map<String, byte[]> expected, Map<String, byte[]> actual, String where) {
    assertEquals(new java.util.TreeSet<>(expected.keySet()), new java.util.TreeSet<>(actual.keySet()), where);
    expected.forEach((k, v) -> assertArrayEquals(v, actual.get(k), where + ": " + k));
  }

  private void clearDataDir() throws IOException {
    try (Stream<Path> files = Files.list(dataDir())) {
      for (Path p : files.toList()) {
        Files.delete(p);
      }
    }
  }

  static String javaBin() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

}
