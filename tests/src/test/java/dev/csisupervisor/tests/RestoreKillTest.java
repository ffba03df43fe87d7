package dev.csisupervisor.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.testing.TestSeed;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 while an agent restores: a state file of 20,000 registrations is opened by a
 * child JVM ({@link RestoreHostMain}) that restores the registry and reconciles away the 2,000 registrations of
 * dead allocations in one commit, and is SIGKILLed inside one of those phases. Whatever the phase, the file must
 * then open strictly with every record readable, holding either all 20,000 registrations or exactly the 18,000 live
 * ones (reconcile is one commit), and the latter once the child reported reconcile done.
 *
 * <p>Each round aims at one phase (open, restore, reconcile) with a random delay inside that phase's expected
 * duration (a guess at first, then what the children measured), counted from the line that starts it. Rounds go on until
 * each phase was hit (at most {@value #MAX_ROUNDS} rounds, as a fresh JVM restoring 20k records takes seconds on
 * a loaded 2-core machine); each must be hit at least once. Seeded ({@link TestSeed}: fixed unless
 * {@code -Dcsi.test.seed=random}, printed on failure): {@code -Dcsi.test.seed=N} replays the delays.
 */
@ExtendWith(TestSeed.OnFailure.class)
class RestoreKillTest {
  private static final int NAMES = 100;
  private static final int ALLOCS = 100;
  private static final int LIVE_ALLOCS = 90;
  private static final int TOTAL = 2 * NAMES * ALLOCS;
  private static final int AFTER_RECONCILE = 2 * NAMES * LIVE_ALLOCS;
  private static final int MAX_ROUNDS = 6;

  /** Where the child was when it died: the last phase line it printed. */
  private enum Phase { OPENING, OPENED, RESTORED, RB, RA, DONE }

  @TempDir Path tmp;
  private final ScheduledExecutorService killer = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void tearDown() {
    killer.shutdownNow();
  }

  @Test
  @Timeout(value = 200, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void sigkillDuringOpenRestoreOrReconcile_fileReopensWithEveryRecord() throws Exception {
    long seed = TestSeed.value();
    System.out.println("restore-kill " + TestSeed.describe());
    Random random = new Random(seed);
    Path stderr = tmp.resolve("child-stderr.log");

    // A state file of 20k registrations (encoded by a real registry, copied into MapDB in one commit).
    Path pristine = tmp.resolve("pristine");
    long g0 = System.nanoTime();
    RestoreHostMain.generate(pristine, NAMES, ALLOCS);
    System.out.println("restore-kill: generated " + TOTAL + " registrations in " + (System.nanoTime() - g0) / 1_000_000 + " ms");

    // Each phase is aimed at from the line that starts it, with a random delay within the phase's expected length.
    // The expectation starts as a guess and is replaced by what the children report (they print ms since start).
    Map<Phase, Long> expected = new EnumMap<>(Map.of(Phase.OPENING, 1500L, Phase.OPENED, 1500L, Phase.RB, 400L));
    List<Phase> targets = List.of(Phase.OPENING, Phase.OPENED, Phase.RB);
    Map<Phase, Integer> diedIn = new EnumMap<>(Phase.class);
    int rounds = 0;
    while (rounds < MAX_ROUNDS && !targets.stream().allMatch(t -> count(diedIn, t) >= 1)) {
      rounds++;
      Phase target = targets.stream().filter(t -> count(diedIn, t) == 0).findFirst().orElseThrow();
      long delayMicros = (long) (random.nextDouble() * expected.get(target) * 1000);
      Path dir = copy(pristine, tmp.resolve("round" + rounds));
      Phase last = null;
      Map<Phase, Long> at = new EnumMap<>(Phase.class);
      try (ChildJvm child = ChildJvm.start(RestoreHostMain.class, stderr, "restore", dir.toString(),
          Integer.toString(LIVE_ALLOCS))) {
        String line;
        while ((line = child.readLine()) != null) {
          String[] p = line.split(" ");
          last = Phase.valueOf(p[0]);
          at.put(last, Long.parseLong(p[last == Phase.RESTORED || last == Phase.RA ? 2 : 1]));
          if (last == Phase.RESTORED) {
            assertEquals(TOTAL, Integer.parseInt(p[1]), "restored registrations");
          }
          if (last == Phase.RA) {
            assertEquals(TOTAL - AFTER_RECONCILE, Integer.parseInt(p[1]), "reconciled registrations");
          }
          if (last == Phase.DONE) {
            assertEquals("0", p[2], "restore problems");
          }
          if (last == target) {
            killer.schedule(child::kill, delayMicros, TimeUnit.MICROSECONDS);
          }
          if (last == Phase.DONE && !child.wasKilled()) {
            child.kill(); // the kill came too late for this round: still a valid (unkilled) restart
          }
        }
        child.awaitExit();
        if (last == null) {
          fail("round " + rounds + ": child printed nothing; stderr:\n" + child.stderrTail());
        }
      }
      learn(expected, at, Phase.OPENING, Phase.OPENED);
      learn(expected, at, Phase.OPENED, Phase.RESTORED);
      learn(expected, at, Phase.RB, Phase.RA);
      diedIn.merge(last, 1, Integer::sum);
      verify(dir, last, "seed " + seed + ", round " + rounds + " (aimed at " + target + " +" + delayMicros
          + "µs, died after " + last + ", phases at " + at + ")");
      deleteRecursively(dir);
    }
    System.out.println("restore-kill: " + rounds + " rounds; died after line: " + diedIn);
    assertTrue(count(diedIn, Phase.OPENING) >= 1, "no kill landed while the store was opening: " + diedIn);
    assertTrue(count(diedIn, Phase.OPENED) >= 1, "no kill landed while the registry restored: " + diedIn);
    assertTrue(count(diedIn, Phase.RB) >= 1, "no kill landed while reconcile committed: " + diedIn);
  }

  /** Replaces the expected length of the phase from {@code from} to {@code to} by what this child took, if it got there. */
  private static void learn(Map<Phase, Long> expected, Map<Phase, Long> at, Phase from, Phase to) {
    if (at.containsKey(from) && at.containsKey(to)) {
      expected.put(from, Math.max(1, at.get(to) - at.get(from)));
    }
  }

  private static int count(Map<Phase, Integer> m, Phase p) {
    return m.getOrDefault(p, 0);
  }

  /** Strict reopen: every record decodes; all 20k, or exactly the 18k live ones; the latter once RA was printed. */
  private static void verify(Path dir, Phase last, String where) {
    try (JournalStateStore store = JournalStateStore.open(dir, JournalStateStore.Options.defaults().withStrict(true));
        PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
      assertEquals(List.of(), registry.restoreProblems(), where);
      int records = (int) store.loadAll().keySet().stream().filter(k -> k.startsWith(PluginKey.STORE_PREFIX)).count();
      boolean reconciled = last == Phase.RA || last == Phase.DONE;
      if (reconciled) {
        assertEquals(AFTER_RECONCILE, records, where + ": reconcile was acknowledged");
      } else {
        assertTrue(records == TOTAL || records == AFTER_RECONCILE,
            where + ": reconcile is one commit, yet the file holds " + records + " records");
      }
      Set<PluginKey> seen = new HashSet<>();
      for (PluginType t : PluginType.values()) {
        for (PluginInfo p : registry.listAll(t)) {
          assertTrue(seen.add(p.key()), where + ": duplicate " + p.key());
          int n = Integer.parseInt(p.name().substring(1));
          int a = Integer.parseInt(p.allocId().substring(1));
          assertEquals(RegistryHostMain.info(t, p.name(), p.allocId(), "v" + n + "." + a), p.withRestored(false), where);
          if (records == AFTER_RECONCILE) {
            assertTrue(a < LIVE_ALLOCS, where + ": dead allocation survived reconcile: " + p.key());
          }
        }
      }
      assertEquals(records, seen.size(), where + ": records vs restored registrations");
    }
  }

  private static Path copy(Path from, Path to) throws IOException {
    try (Stream<Path> files = Files.walk(from)) {
      for (Path f : files.toList()) {
        Files.copy(f, to.resolve(from.relativize(f).toString()));
      }
    }
    return to;
  }

  private static void deleteRecursively(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    }
  }
}
