package dev.csisupervisor.state;

import static dev.csisupervisor.state.StateStoreContractTest.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.state.CrashSimulator.Stats;
import dev.csisupervisor.state.PowerCutIo.Expectation;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store under a simulated power cut at every point of a run ({@link CrashSimulator}): every crash state must
 * open, strict and repairing, with every acknowledged change and nothing reported failed. Over commits, segment
 * rolls, segments without preallocation, background and final checkpoints, failed writes and forces, migration and
 * repair. Small (4 KiB) segments, so that a run of a few dozen commits rolls and checkpoints several times.
 */
class CrashSimulatorTest {
  static final long SEGMENT = 4096;
  /**
   * The heavy variant of the runs below, from benchmarks/crash-simulator.sh ({@code -Dcsi.crash.heavy=true}): more
   * commits, so more crash points of each kind. The suite's runs are as short as each test's assertions allow (they
   * still roll, prepare, checkpoint, truncate and fail as often as asserted; shorter runs of the two segment tests
   * did not roll enough, so those keep their length here and run twice as long there).
   */
  static final boolean HEAVY = Boolean.getBoolean("csi.crash.heavy");

  /** {@code heavy} random commits in the heavy variant, {@code suite} in the suite's. */
  static int commits(int heavy, int suite) {
    return HEAVY ? heavy : suite;
  }

  @TempDir Path tmp;

  static JournalStateStore.Options options() {
    return JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(SEGMENT);
  }

  /** Checks every crash state of the run; prints what it checked. */
  static Stats simulate(Path tmp, PowerCutRun run) throws IOException {
    Stats stats = new CrashSimulator(tmp, SEGMENT).check(run.io);
    System.out.println("[crash simulator] " + stats);
    return stats;
  }

  /** How many recorded operations' descriptions contain {@code text}. */
  static long count(PowerCutRun run, String text) {
    return run.io.log().stream().filter(op -> op.what().contains(text)).count();
  }

  @Test
  void commitsSegmentRollsAndCheckpoints_surviveAPowerCutAnywhere() throws IOException {
    PowerCutRun run = new PowerCutRun(tmp.resolve("root"), options(), Map.of());
    run.open();
    run.randomCommits(new Random(1), commits(60, 30));
    assertTrue(run.commit(List.of(new StateChange.Put("big", bytes("b".repeat(6000))),
        new StateChange.Put("small", bytes("s")))), "a batch larger than a segment gets one of its own");
    run.randomCommits(new Random(2), commits(60, 30));
    run.close();
    assertTrue(count(run, "-> data/state/journal-") >= 4, "segments rolled");
    assertTrue(count(run, "rename data/state/next-segment-") >= 2, "prepared segments were used");
    assertTrue(count(run, "-> data/state/checkpoint-") >= 3, "background checkpoints and the final one");
    simulate(tmp, run);
  }

  @Test
  void smallDisk_segmentsWithoutPreallocation_surviveAPowerCutAnywhere() throws IOException {
    PowerCutRun run = new PowerCutRun(tmp.resolve("root"), options(), Map.of());
    run.io.noRoomForPreallocation(true);
    run.open();
    run.randomCommits(new Random(3), commits(120, 60));
    run.close();
    assertTrue(count(run, "truncate data/state/journal-") >= 3, "segments made without preallocation");
    assertTrue(count(run, "-> data/state/journal-") >= 3, "segments rolled");
    simulate(tmp, run);
  }

  @Test
  void failedWritesAndForces_neverComeBack_andAcknowledgedChangesStay() throws IOException {
    PowerCutRun run = new PowerCutRun(tmp.resolve("root"), options(), Map.of());
    run.open();
    Random random = new Random(4);
    int[][] faults = {{0, 1}, {1, 1}, {0, 2}, {1, 3}, {0, 4}, {1, 2}};
    for (int[] fault : faults) {
      run.randomCommits(random, commits(4, 2));
      if (fault[0] == 0) {
        run.io.failForceIn(fault[1]);
      } else {
        run.io.failWriteIn(fault[1]);
      }
      run.randomCommits(random, commits(4, 2));
    }
    run.close();
    assertTrue(run.failures() >= 4, "failures: " + run.failures());
    simulate(tmp, run);
  }

  @Test
  void restartAfterACrash_foldsTheJournalInTheBackground_thenCloses() throws Exception {
    Path root = Files.createDirectories(tmp.resolve("root"));
    Map<String, String> acknowledged = new HashMap<>();
    Path live = tmp.resolve("live");
    try (JournalStateStore store = JournalStateStore.open(live, options())) {
      for (int i = 0; i < 60; i++) {
        String key = "plugin/p" + (i % 17);
        if (i % 5 == 4) {
          store.delete(key);
          acknowledged.remove(key);
        } else {
          store.put(key, bytes("value " + i + " " + "x".repeat(i * 7)));
          acknowledged.put(key, "value " + i + " " + "x".repeat(i * 7));
        }
      }
      store.awaitCheckpoint();
      // A background fold may just have retired every closed segment (when depends on the checkpoint thread): write
      // on until the journal has moved past one again. The image is larger than a segment by now, so no fold starts
      // at two segments, and the loop ends at the first roll.
      for (int i = 60; StateFiles.segments(live).size() < 2; i++) {
        assertTrue(i < 1_000, "no segment roll after " + i + " changes");
        String key = "plugin/p" + (i % 17);
        store.put(key, bytes("value " + i + " " + "x".repeat(300)));
        acknowledged.put(key, "value " + i + " " + "x".repeat(300));
        store.awaitCheckpoint();
      }
      StateFiles.crashCopy(live, root.resolve("data"));
    }
    assertTrue(StateFiles.segments(root.resolve("data")).size() >= 2, "the crash left several segments");
    PowerCutRun run = new PowerCutRun(root, options(), acknowledged);
    run.open();
    assertTrue(count(run, "-> data/state/checkpoint-") >= 1, "open folded the journal in the background");
    run.randomCommits(new Random(5), 10);
    run.close();
    simulate(tmp, run);
  }

  @Test
  void migrationOfLegacyFiles_survivesAPowerCutAnywhere() throws IOException {
    Path root = Files.createDirectories(tmp.resolve("root"));
    Map<String, String> legacy = Map.of("plugin/a", "1", "plugin/b", "two", "plugin/c", "three".repeat(50));
    Files.createDirectories(root.resolve("data"));
    for (String name : List.of("registry.db", "registry.db.mirror")) {
      JournalStateStoreTest.writeLegacy(root.resolve("data").resolve(name), legacy);
    }
    PowerCutRun run = new PowerCutRun(root, options(), legacy);
    run.open();
    run.deletedForGood(Path.of("data/registry.db"), Path.of("data/registry.db.mirror"));
    try (var files = Files.list(root.resolve("data"))) {
      assertEquals(List.of("state"), files.map(p -> p.getFileName().toString()).toList(), "the old files are gone");
    }
    run.randomCommits(new Random(6), 8);
    run.close();
    simulate(tmp, run);
  }

  @Test
  void repairOfADamagedJournal_survivesAPowerCutAnywhere() throws IOException {
    Path root = Files.createDirectories(tmp.resolve("root"));
    Path live = tmp.resolve("live");
    Map<String, String> kept = new HashMap<>();
    try (JournalStateStore store = JournalStateStore.open(live, options())) {
      for (int i = 0; i < 10; i++) {
        store.put("plugin/p" + i, bytes("value " + i));
        if (i < 5) {
          kept.put("plugin/p" + i, "value " + i);
        }
      }
      StateFiles.crashCopy(live, root.resolve("data"));
    }
    Path segment = StateFiles.segments(root.resolve("data")).get(0);
    byte[] bytes = Files.readAllBytes(segment);
    int sixth = new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1).indexOf("value 5");
    bytes[sixth + 2] ^= 0x04; // bit rot in the sixth of ten batches: corruption, not a torn tail
    Files.write(segment, bytes);
    PowerCutRun run = new PowerCutRun(root, options().withStrict(false), kept);
    run.open(Expectation.exactly("repairing", kept).withStrictMayFail());
    assertTrue(count(run, "-> data/state/corrupt-") >= 1, "the damaged segment was moved aside");
    run.randomCommits(new Random(7), 8);
    run.close();
    simulate(tmp, run);
  }
}
