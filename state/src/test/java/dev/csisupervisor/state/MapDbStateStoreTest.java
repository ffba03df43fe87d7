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

  // ---- files, modes, locking ----

  @Test
  void open_createsDataDirectory0700_stateFile0600_lockFile0600() throws IOException {
    assertEquals(dbFile(), ((MapDbStateStore) store).file());
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dataDir())));
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dbFile())));
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
  void truncatedFile_isMovedAsideWithItsBytes_andEmptyStoreOpens() throws IOException {
    byte[] good = writeGoodFile();
    byte[] truncated = Arrays.copyOf(good, good.length / 2);
    Files.write(dbFile(), truncated);

    MapDbStateStore opened = MapDbStateStore.open(dataDir(), opts(false));
    store = opened;
    Path moved = dataDir().resolve(QUARANTINE_NAME);
    assertEquals(moved, opened.quarantinedFile().orElseThrow());
    assertArrayEquals(truncated, Files.readAllBytes(moved));
    assertTrue(store.loadAll().isEmpty());
    store.put("fresh", bytes("1"));
    store = reopen(store);
    assertEquals(List.of("fresh"), List.copyOf(store.loadAll().keySet()));
    assertTrue(((MapDbStateStore) store).quarantinedFile().isEmpty());
  }

  @Test
  void truncatedFile_inStrictMode_failsNamingFile_andLeavesItUntouched() throws IOException {
    byte[] good = writeGoodFile();
    byte[] truncated = Arrays.copyOf(good, 4096);
    Files.write(dbFile(), truncated);

    StateFileCorruptException e = assertThrows(StateFileCorruptException.class, () -> MapDbStateStore.open(dataDir(), opts(true)));
    assertEquals(dbFile(), e.file());
    assertTrue(e.getMessage().contains(dbFile().toString()) && e.getMessage().contains("corrupt"), e.getMessage());
    assertTrue(e.getCause() != null);
    assertArrayEquals(truncated, Files.readAllBytes(dbFile()));
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
  void zeroByteFileWithWriteAheadLog_isTreatedAsCorrupt_andBothAreMovedAside() throws IOException {
    store.close();
    Files.write(dbFile(), new byte[0]);
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

    StateFileCorruptException e = assertThrows(StateFileCorruptException.class, () -> MapDbStateStore.open(dataDir(), opts(true)));
    assertEquals(dbFile(), e.file());
    store = MapDbStateStore.open(dataDir(), opts(false));
    assertArrayEquals(garbage, Files.readAllBytes(dataDir().resolve(QUARANTINE_NAME)));
    assertTrue(store.loadAll().isEmpty());
  }

  @Test
  void secondQuarantineAtSameInstant_getsDistinctName() throws IOException {
    store.close();
    Files.write(dbFile(), bytes("garbage garbage garbage"));
    MapDbStateStore.open(dataDir(), opts(false)).close();
    Files.write(dbFile(), bytes("more garbage garbage"));
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
