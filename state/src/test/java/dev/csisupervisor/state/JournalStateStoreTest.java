package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateFiles.crashCopy;
import static dev.csisupervisor.state.StateFiles.names;
import static dev.csisupervisor.state.StateFiles.strings;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.mapdb.DB;
import org.mapdb.DBMaker;
import org.mapdb.Serializer;

class JournalStateStoreTest extends StateStoreContractTest {

  @TempDir Path tmp;

  @Override
  protected StateStore newStore() {
    return JournalStateStore.open(dataDir());
  }

  @Override
  protected StateStore reopen(StateStore store) {
    store.close();
    return JournalStateStore.open(dataDir());
  }

  private Path dataDir() {
    return tmp.resolve("data");
  }

  private static JournalStateStore.Options small() {
    return JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(4096);
  }

  @Test
  void firstLoadAllAfterOpen_servesTheRecordsOpenReadBack_andLaterReadsSeeChanges() {
    store.put("a", bytes("1"));
    store = reopen(store);
    Map<String, byte[]> first = store.loadAll();
    assertEquals(Map.of("a", "1"), strings(first));
    first.get("a")[0] = 'x'; // the caller owns what it got
    assertEquals(Map.of("a", "1"), strings(store.loadAll()));
    store.put("b", bytes("2"));
    assertEquals(Map.of("a", "1", "b", "2"), strings(store.loadAll()));
  }

  @Test
  void open_createsStateDirectory0700_filesAre0600() throws IOException {
    store.put("a", bytes("1"));
    Path dir = dataDir().resolve("state");
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
    for (Path f : StateFiles.list(dir)) {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
    }
    store.close();
    for (Path f : StateFiles.list(dir)) {
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
    }
  }

  /**
   * The agent closes the store on a thread started from its SIGTERM handler, which has no context class loader;
   * MapDB needs one. The final checkpoint must still be written, and a store opened on such a thread must read it.
   */
  @Test
  void closeAndOpen_onAThreadWithoutAContextClassLoader_stillCheckpoint() throws Exception {
    for (int i = 0; i < 5; i++) {
      store.put("k" + i, bytes("v" + i));
    }
    Map<String, byte[]> read = new HashMap<>();
    List<Throwable> failures = new ArrayList<>();
    Thread t = new Thread(() -> {
      try {
        store.close();
        try (JournalStateStore reopened = JournalStateStore.open(dataDir(), small())) {
          read.putAll(reopened.loadAll());
        }
      } catch (Throwable e) {
        failures.add(e);
      }
    });
    t.setContextClassLoader(null);
    t.start();
    t.join(30_000);
    assertEquals(List.of(), failures);
    assertEquals(List.of("checkpoint-0000000000000005.db", "lock"), names(dataDir()),
        "the final checkpoint was written and the journal folded into it");
    assertEquals(5, read.size());
  }

  @Test
  void cleanClose_leavesOneCheckpointAndNoJournal_andReopenReadsIt() throws IOException {
    for (int i = 0; i < 20; i++) {
      store.put("k" + i, bytes("v" + i));
    }
    store.delete("k3");
    store.close();
    assertEquals(List.of("checkpoint-0000000000000015.db", "lock"), names(dataDir()));
    store = JournalStateStore.open(dataDir(), small());
    assertEquals(19, store.loadAll().size());
    assertTrue(store.get("k3").isEmpty());
    assertEquals(21, ((JournalStateStore) store).lastSequence(), "sequences go on after a reopen");
  }

  @Test
  void manyChangesOverSmallSegments_rollAndCheckpointInTheBackground_andReopenExactly() throws Exception {
    store.close();
    store = JournalStateStore.open(dataDir(), small());
    Map<String, String> model = new HashMap<>();
    Random random = new Random(42);
    for (int i = 0; i < 3000; i++) {
      String key = "plugin/csi-node/p" + random.nextInt(200) + "/alloc";
      if (random.nextInt(5) == 0) {
        store.delete(key);
        model.remove(key);
      } else if (random.nextInt(7) == 0) {
        String k2 = "plugin/csi-controller/c" + random.nextInt(50) + "/a";
        String x = "x".repeat(random.nextInt(300));
        store.apply(List.of(new StateChange.Put(key, bytes("batch" + i)), new StateChange.Delete(k2),
            new StateChange.Put(k2 + "x", bytes(x))));
        model.put(key, "batch" + i);
        model.remove(k2);
        model.put(k2 + "x", x);
      } else {
        String v = "v" + i + "-".repeat(random.nextInt(200));
        store.put(key, bytes(v));
        model.put(key, v);
      }
      if (i % 500 == 499) {
        ((JournalStateStore) store).awaitCheckpoint();
        Path copy = crashCopy(dataDir(), tmp.resolve("crash-" + i));
        try (JournalStateStore crashed = JournalStateStore.open(copy, small())) {
          assertEquals(model, strings(crashed.loadAll()), "after a crash at change " + i);
        }
      }
    }
    assertEquals(model, strings(store.loadAll()));
    store.close();
    store = JournalStateStore.open(dataDir(), small());
    assertEquals(model, strings(store.loadAll()));
  }

  @Test
  void aLargeImage_isFoldedOnlyOnceTheJournalPastItIsAsLarge_notAtEverySegment() throws Exception {
    store.close();
    store = JournalStateStore.open(dataDir(), small());
    JournalStateStore journal = (JournalStateStore) store;
    // An image of about five 4 KiB segments.
    for (int i = 0; i < 10; i++) {
      store.put("big/" + i, bytes("b".repeat(2000)));
      journal.awaitCheckpoint();
    }
    // While the image is small, a fold runs at every roll; this one takes in the whole image.
    store.put("small/start", bytes("s"));
    journal.awaitCheckpoint();
    String before = checkpointNames(journal);
    assertTrue(before.compareTo("[checkpoint-0000000000000008.db]") >= 0 && before.split(",").length == 1,
        "at least eight of the large values folded: " + before);
    // Now the journal past the checkpoint must reach the image's size (5 segments) before the next fold.
    for (int i = 0; i < 6; i++) { // about 3 segments of small changes
      store.put("small/" + i, bytes("s".repeat(1800)));
      journal.awaitCheckpoint();
    }
    assertEquals(before, checkpointNames(journal), "no checkpoint while the journal past it is smaller than it");
    for (int i = 6; i < 20; i++) {
      store.put("small/" + i, bytes("s".repeat(1800)));
      journal.awaitCheckpoint();
    }
    assertTrue(!before.equals(checkpointNames(journal)), "folded once the journal grew as large as the image");
    Map<String, String> expected = strings(store.loadAll());
    store.close();
    store = JournalStateStore.open(dataDir(), small());
    assertEquals(expected, strings(store.loadAll()));
  }

  private static String checkpointNames(JournalStateStore s) throws IOException {
    return StateFiles.names(s.directory().getParent()).stream().filter(n -> n.startsWith("checkpoint-")).toList()
        .toString();
  }

  @Test
  void secondOpenInSameProcess_failsFastWithLockedError() {
    StateFileLockedException e = assertTimeoutPreemptively(Duration.ofSeconds(5),
        () -> assertThrows(StateFileLockedException.class, () -> JournalStateStore.open(dataDir())));
    assertTrue(e.getMessage().contains(dataDir().resolve("state") + " is locked by another process"), e.getMessage());
    store.put("still", bytes("works"));
    assertArrayEquals(bytes("works"), store.get("still").orElseThrow());
  }

  @Test
  void openWhileAnotherProcessHoldsIt_failsFast_andKillReleasesLock() throws Exception {
    store.close();
    Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
        System.getProperty("java.class.path"), LockHolderMain.class.getName(), dataDir().toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("LOCKED", assertTimeoutPreemptively(Duration.ofSeconds(30), out::readLine));
      assertTimeoutPreemptively(Duration.ofSeconds(5),
          () -> assertThrows(StateFileLockedException.class, () -> JournalStateStore.open(dataDir())));
    } finally {
      child.destroyForcibly();
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    store = JournalStateStore.open(dataDir(), small());
    assertTrue(new String(store.get("held-by").orElseThrow(), StandardCharsets.UTF_8).startsWith("pid "),
        "the killed holder's acknowledged change survives");
  }

  @Test
  void childJvmKilledWhileMapDbIsLoaded_leavesNoNativeLibraryInTmp() throws Exception {
    store.put("a", bytes("1"));
    store.close(); // a checkpoint: the child reads it with MapDB, whose checksums load lz4-java's xxhash
    Path childTmp = Files.createDirectory(tmp.resolve("java-tmp"));
    Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Djava.io.tmpdir=" + childTmp, "-cp", System.getProperty("java.class.path"), LockHolderMain.class.getName(),
        dataDir().toString())
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("LOCKED", assertTimeoutPreemptively(Duration.ofSeconds(30), out::readLine));
    } finally {
      child.destroyForcibly(); // SIGKILL: no shutdown hook, no deleteOnExit
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
    }
    try (var left = Files.list(childTmp)) {
      assertEquals(List.of(), left.map(p -> p.getFileName().toString()).filter(n -> n.contains("lz4")).toList(),
          "a killed JVM must leave no extracted native library behind");
    }
    store = JournalStateStore.open(dataDir(), small());
    assertArrayEquals(bytes("1"), store.get("a").orElseThrow());
  }

  @Test
  void dataDirectoryThatIsAFile_isClearError() throws IOException {
    Path notADir = Files.writeString(tmp.resolve("file"), "x");
    StateStoreException e = assertThrows(StateStoreException.class, () -> JournalStateStore.open(notADir));
    assertTrue(e.getMessage().contains(notADir.toString()) && e.getMessage().contains("not a directory"), e.getMessage());
  }

  @Test
  void stateDirectoryThatIsAFile_isClearError() throws IOException {
    store.close();
    Path other = Files.createDirectories(tmp.resolve("other"));
    Files.writeString(other.resolve("state"), "x");
    StateStoreException e = assertThrows(StateStoreException.class, () -> JournalStateStore.open(other));
    assertTrue(e.getMessage().contains("not a directory"), e.getMessage());
  }

  @Test
  void invalidOptionsAndKeys_nameTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> JournalStateStore.Options.defaults().withSegmentBytes(10));
    assertTrue(e.getMessage().contains("segmentBytes") && e.getMessage().contains("10"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> JournalStateStore.Options.defaults().withClock(null));
    assertTrue(e.getMessage().contains("clock"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> JournalStateStore.open(null));
    assertTrue(e.getMessage().contains("dataDir"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> JournalStateStore.open(dataDir(), null));
    assertTrue(e.getMessage().contains("options"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> store.put("k".repeat(70_000), bytes("v")));
    assertTrue(e.getMessage().contains("over the limit of 65535"), e.getMessage());
    assertEquals(0, store.loadAll().size(), "nothing was written");
  }

  @Test
  void readOnly_readsWithoutWritingAnything_andRefusesChanges() throws IOException {
    store.put("a", bytes("1"));
    Path copy = crashCopy(dataDir(), tmp.resolve("copy"));
    Map<String, byte[]> before = StateFiles.snapshot(copy);
    try (JournalStateStore ro = JournalStateStore.open(copy, JournalStateStore.Options.defaults().withReadOnly(true))) {
      assertEquals(Map.of("a", "1"), strings(ro.loadAll()));
      assertEquals(Map.of("a", "1"), strings(ro.loadAll()));
      IllegalStateException e = assertThrows(IllegalStateException.class, () -> ro.put("b", bytes("2")));
      assertTrue(e.getMessage().contains("read-only"), e.getMessage());
    }
    Map<String, byte[]> after = StateFiles.snapshot(copy);
    assertEquals(before.keySet(), after.keySet());
    before.forEach((k, v) -> assertArrayEquals(v, after.get(k), k));
  }

  // ---- migration from the two-file MapDB store of earlier versions ----

  static void writeLegacy(Path file, Map<String, String> records) {
    DB db = DBMaker.fileDB(file.toFile()).transactionEnable().fileLockDisable().make();
    var map = db.hashMap("records", Serializer.STRING, Serializer.BYTE_ARRAY).createOrOpen();
    records.forEach((k, v) -> map.put(k, bytes(v)));
    db.commit();
    db.close();
  }

  @Test
  void legacyStateFiles_areMigratedOnce_thenDeleted() throws IOException {
    store.close();
    Path old = Files.createDirectories(tmp.resolve("old"));
    writeLegacy(old.resolve("registry.db"), Map.of("plugin/a", "1", "plugin/b", "2"));
    writeLegacy(old.resolve("registry.db.mirror"), Map.of("plugin/a", "1", "plugin/b", "2"));
    Files.writeString(old.resolve("registry.db.lock"), "");
    Files.writeString(old.resolve("registry.db.corrupt-20240101T000000.000Z"), "kept for the operator");
    try (JournalStateStore s = JournalStateStore.open(old, small())) {
      assertEquals(Map.of("plugin/a", "1", "plugin/b", "2"), strings(s.loadAll()));
      s.put("plugin/c", bytes("3"));
    }
    try (var files = Files.list(old)) {
      assertEquals(List.of("registry.db.corrupt-20240101T000000.000Z", "state"),
          files.map(p -> p.getFileName().toString()).sorted().toList());
    }
    try (JournalStateStore s = JournalStateStore.open(old, small())) {
      assertEquals(Map.of("plugin/a", "1", "plugin/b", "2", "plugin/c", "3"), strings(s.loadAll()));
    }
  }

  @Test
  void legacyStateFileDamaged_migratesFromTheMirror() throws IOException {
    store.close();
    Path old = Files.createDirectories(tmp.resolve("old"));
    writeLegacy(old.resolve("registry.db.mirror"), Map.of("plugin/a", "1"));
    Files.write(old.resolve("registry.db"), new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9});
    try (JournalStateStore s = JournalStateStore.open(old, small())) {
      assertEquals(Map.of("plugin/a", "1"), strings(s.loadAll()));
    }
    assertFalse(Files.exists(old.resolve("registry.db")));
  }

  @Test
  void legacyStateFilesBothUnreadable_strictFailsTouchingNothing_otherwiseMovedAside() throws IOException {
    store.close();
    Path old = Files.createDirectories(tmp.resolve("old"));
    byte[] junk = new byte[300];
    new Random(7).nextBytes(junk);
    Files.write(old.resolve("registry.db"), junk);
    StateFileCorruptException e = assertThrows(StateFileCorruptException.class, () -> JournalStateStore.open(old, small()));
    assertTrue(e.getMessage().contains("registry.db"), e.getMessage());
    assertArrayEquals(junk, Files.readAllBytes(old.resolve("registry.db")));
    try (JournalStateStore s = JournalStateStore.open(old, small().withStrict(false))) {
      assertEquals(0, s.loadAll().size());
      Path moved = s.quarantinedTo().orElseThrow();
      assertArrayEquals(junk, Files.readAllBytes(moved.resolve("registry.db")));
    }
    assertFalse(Files.exists(old.resolve("registry.db")));
  }

  @Test
  void interruptedCaller_stillCommits_andKeepsItsInterrupt() {
    Thread.currentThread().interrupt();
    try {
      store.put("a", bytes("1"));
      assertTrue(Thread.currentThread().isInterrupted());
    } finally {
      Thread.interrupted();
    }
    store.put("b", bytes("2"));
    assertEquals(2, store.loadAll().size());
  }

  @Test
  void restoredAfterCrashWithManySegments_foldsThemIntoACheckpoint() throws Exception {
    store.close();
    store = JournalStateStore.open(dataDir(), small());
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      keys.add("key-" + i);
      store.put("key-" + i, bytes("x".repeat(100)));
    }
    ((JournalStateStore) store).awaitCheckpoint();
    Path copy = crashCopy(dataDir(), tmp.resolve("crash"));
    // Before the open: its background checkpoint may fold them all before a look after it.
    assertTrue(names(copy).stream().filter(n -> n.startsWith("journal-")).count() >= 1, names(copy).toString());
    try (JournalStateStore s = JournalStateStore.open(copy, small())) {
      assertEquals(200, s.loadAll().size());
      s.awaitCheckpoint();
      assertEquals(1, names(copy).stream().filter(n -> n.startsWith("checkpoint-")).count(), names(copy).toString());
      assertEquals(0, names(copy).stream().filter(n -> n.startsWith("journal-")).count(), names(copy).toString());
      assertEquals(200, s.loadAll().size());
    }
  }
}
