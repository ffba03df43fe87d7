package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateFiles.crashCopy;
import static dev.csisupervisor.state.StateFiles.strings;
import static dev.csisupervisor.state.StateStoreContractTest.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.testing.TmpfsMount;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A failed write or force fails exactly its call; the store keeps working and never shows what failed. */
class JournalFaultsTest {

  @TempDir Path tmp;

  private static JournalStateStore.Options small() {
    return JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(4096);
  }

  /** Writes a file {@code filler} in {@code dir} until its file system is full; returns it (delete it to free the space). */
  private static Path fillUp(Path dir) throws IOException {
    Path filler = dir.resolve("filler");
    try (OutputStream o = Files.newOutputStream(filler)) {
      byte[] block = new byte[4096];
      while (true) {
        o.write(block);
      }
    } catch (IOException full) {
      assertTrue(String.valueOf(full.getMessage()).contains("No space left"), String.valueOf(full));
    }
    return filler;
  }

  /**
   * Fails the n-th write or force from the third change on (counting the writes that preallocate segments too),
   * keeps changing, and checks the store in the same process, after a crash, and after a clean reopen.
   */
  @ParameterizedTest(name = "{0} #{1}")
  @CsvSource({"write,1", "write,2", "write,3", "write,5", "write,8", "force,1", "force,2", "force,3", "force,4",
      "force,6"})
  void failedWriteOrForce_failsThatChangeOnly_andTheStoreGoesOn(String what, int n) throws Exception {
    FaultyChannels io = new FaultyChannels();
    Path data = tmp.resolve("data");
    Map<String, String> model = new HashMap<>();
    int failures = 0;
    try (JournalStateStore store = JournalStateStore.open(data, small(), io)) {
      for (int i = 0; i < 60; i++) {
        if (i == 2) {
          if (what.equals("write")) {
            io.failWriteIn(n);
          } else {
            io.failForceIn(n);
          }
        }
        String key = "k" + (i % 23);
        String value = "change " + i + " " + "x".repeat(i * 5);
        try {
          store.put(key, bytes(value));
          model.put(key, value);
        } catch (StateStoreException e) {
          failures++;
          assertTrue(e.getMessage().contains("No space left on device") && e.getMessage().contains("state journal")
              && e.getMessage().contains(data.resolve("state").toString()), e.getMessage());
        }
        assertEquals(model.get(key), store.get(key).map(v -> new String(v)).orElse(null), "in process, change " + i);
      }
      assertEquals(1, failures, "exactly the one injected fault failed a change");
      assertEquals(model, strings(store.loadAll()));
      store.awaitCheckpoint();
      try (JournalStateStore crashed = JournalStateStore.open(crashCopy(data, tmp.resolve("crash")), small())) {
        assertEquals(model, strings(crashed.loadAll()), "after a crash");
      }
    }
    try (JournalStateStore reopened = JournalStateStore.open(data, small())) {
      assertEquals(model, strings(reopened.loadAll()), "after a clean reopen");
    }
  }

  @Test
  void failedForce_thenCrashBeforeAnyOtherChange_neverShowsTheFailedChange() throws Exception {
    FaultyChannels io = new FaultyChannels();
    Path data = tmp.resolve("data");
    try (JournalStateStore store = JournalStateStore.open(data, small(), io)) {
      store.put("a", bytes("acknowledged"));
      io.failForceIn(1);
      assertThrows(StateStoreException.class, () -> store.put("b", bytes("failed")));
      try (JournalStateStore crashed = JournalStateStore.open(crashCopy(data, tmp.resolve("crash")), small())) {
        assertEquals(Map.of("a", "acknowledged"), strings(crashed.loadAll()));
      }
    }
  }

  /** A real full disk: a 1 MiB tmpfs (needs root to mount; skipped with the reason otherwise). */
  @Test
  void realFullDisk_failsChangesClearly_andWorksAgainOnceSpaceIsFreed_withoutARestart() throws Exception {
    try (TmpfsMount tiny = TmpfsMount.mount(tmp.resolve("tiny"), "1m")) {
      Path mount = tiny.dir();
      Map<String, String> model = new HashMap<>();
      Path data = mount.resolve("data");
      try (JournalStateStore store = JournalStateStore.open(data, small())) {
        store.put("before", bytes("the disk filled up"));
        model.put("before", "the disk filled up");
        Path filler = fillUp(mount);
        int failed = 0;
        for (int i = 0; i < 200 && failed < 3; i++) {
          String value = "during " + i + " " + "y".repeat(200);
          try {
            store.put("k" + i, bytes(value));
            model.put("k" + i, value); // fits into the preallocated segment: durable all the same
          } catch (StateStoreException e) {
            failed++;
            assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
          }
        }
        assertEquals(3, failed, "changes fail once the preallocated segment is used up");
        Files.delete(filler);
        for (int i = 0; i < 50; i++) {
          store.put("after-" + i, bytes("space again"));
          model.put("after-" + i, "space again");
        }
        assertEquals(model, strings(store.loadAll()));
      }
      try (JournalStateStore reopened = JournalStateStore.open(data, small())) {
        assertEquals(model, strings(reopened.loadAll()));
      }
    }
  }

  /**
   * A data directory on a 4 MiB file system with the default 4 MiB segments: once each segment was preallocated at
   * its full size, so not one change ever committed there. Segments now take what fits.
   */
  @Test
  void fourMibDisk_defaultSegments_commits_survivesFillingUp_andRecoversWithoutARestart() throws Exception {
    try (TmpfsMount disk = TmpfsMount.mount(tmp.resolve("four"), "4m")) {
      Path data = disk.dir().resolve("data");
      Map<String, String> model = new HashMap<>();
      JournalStateStore.Options defaults = JournalStateStore.Options.defaults().withStrict(true);
      try (JournalStateStore store = JournalStateStore.open(data, defaults)) {
        for (int i = 0; i < 2_000; i++) {
          String value = "registration " + i + " " + "r".repeat(300);
          store.put("plugin/p" + (i % 500), bytes(value));
          model.put("plugin/p" + (i % 500), value);
        }
        Path filler = fillUp(disk.dir());
        int failed = 0;
        for (int i = 0; i < 50_000 && failed < 3; i++) {
          String value = "while full " + i + " " + "f".repeat(300);
          try {
            store.put("plugin/p" + (i % 500), bytes(value));
            model.put("plugin/p" + (i % 500), value);
          } catch (StateStoreException e) {
            failed++;
            assertTrue(e.getMessage().contains("No space left on device") && e.getMessage().contains("nothing changed"),
                e.getMessage());
          }
        }
        assertEquals(3, failed, "changes fail cleanly once the disk is full");
        assertEquals(model, strings(store.loadAll()), "a failed change changed nothing");
        Files.delete(filler);
        for (int i = 0; i < 2_000; i++) {
          String value = "space again " + i + " " + "s".repeat(300);
          store.put("plugin/p" + (i % 500), bytes(value));
          model.put("plugin/p" + (i % 500), value);
        }
        assertEquals(model, strings(store.loadAll()));
      }
      try (JournalStateStore reopened = JournalStateStore.open(data, defaults)) {
        assertEquals(model, strings(reopened.loadAll()), "exactly the acknowledged changes, after a reopen");
      }
    }
  }

  @Test
  void batchLargerThanASegment_getsASegmentOfItsOwn() {
    try (JournalStateStore store = JournalStateStore.open(tmp.resolve("big"), small())) {
      store.apply(List.of(new StateChange.Put("big", new byte[20_000]), new StateChange.Put("small", bytes("s"))));
      store.put("next", bytes("n"));
      assertEquals(3, store.loadAll().size());
    }
    try (JournalStateStore store = JournalStateStore.open(tmp.resolve("big"), small())) {
      assertEquals(20_000, store.get("big").orElseThrow().length);
    }
  }
}
