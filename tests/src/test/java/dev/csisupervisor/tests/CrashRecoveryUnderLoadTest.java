package dev.csisupervisor.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateFileCorruptException;
import dev.csisupervisor.testing.TestSeed;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 of a registry host process under load, 32 times on the same state file.
 *
 * <p>The child ({@link RegistryHostMain}) runs what an agent runs after a restart: restore from a strict MapDB
 * store, eight subscribers checking every event they get, eight worker threads registering / updating /
 * confirming / deregistering the plugins of the live allocations, and a concurrent {@code reconcile} dropping
 * the restored plugins of dead allocations. It is SIGKILLed at a random point: right after it got ready, while
 * reconcile is committing, or after a random number of acknowledged changes. Between rounds the test retires
 * allocations (the next child must reconcile them away) and adds new ones.
 *
 * <p>After every kill the file must open in strict mode with every record readable, and hold exactly the
 * acknowledged state (a change begun but not acknowledged may have landed or not); one record per key; a
 * reconcile is all-or-nothing. While the child runs: every call returned the event its key's history demands,
 * the event sequence numbers handed back are unique per type, and no subscriber saw a gap, a duplicate or an
 * event inconsistent with its snapshot.
 *
 * <p>A state file that no longer opens fails the test, with a copy of the data directory kept under
 * {@code target/crash-evidence/}. (MapDB 3.1.0 alone corrupts about once in 30-60 kills under this load: it never
 * replays its write-ahead log. The store's mirror file is what makes this test pass.)
 *
 * <p>Seeded ({@link TestSeed}: fixed unless {@code -Dcsi.test.seed=random}, printed on failure):
 * {@code -Dcsi.test.seed=N} reruns the same schedule of kills and allocations (the interleaving of the child's
 * threads is up to the machine).
 */
@ExtendWith(TestSeed.OnFailure.class)
class CrashRecoveryUnderLoadTest {
  private static final int ROUNDS = 32;
  private static final int THREADS = 8;

  @TempDir Path tmp;

  private enum KillAt { READY, RECONCILE, ACKS }

  private enum Op { REG, CONFIRM, CONFIRM_RESTORED, DEREG }

  /** A change the child began: the key, the operation and the version it writes (null for DEREG). */
  private record Begun(PluginKey key, Op op, String version) {}

  @Test
  @Timeout(value = 240, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void sigkillUnderLoad_everyAcknowledgedChangeSurvives_andTheFileOpensStrictly() throws Exception {
    long seed = TestSeed.value();
    System.out.println("crash schedule " + TestSeed.describe());
    Random random = new Random(seed);
    Path dataDir = tmp.resolve("data");
    Path stderr = tmp.resolve("child-stderr.log");

    Map<PluginKey, String> model = new HashMap<>(); // key -> version known to be durable
    List<String> allocs = new ArrayList<>();
    for (int i = 0; i < THREADS; i++) {
      allocs.add("r0-a" + i);
    }
    Map<KillAt, Integer> kills = new EnumMap<>(KillAt.class);
    int totalAcks = 0;
    int killsDuringCheckpoint = 0;
    int inFlightLanded = 0;
    int inFlightLost = 0;
    int reconciledAway = 0;
    int reconcilesCutShort = 0;

    for (int round = 1; round <= ROUNDS; round++) {
      String where = "seed " + seed + ", round " + round;
      if (round > 1 && random.nextInt(3) == 0) {
        // Retire an allocation (its plugins must be reconciled away by the next child) and start a new one.
        allocs.remove(random.nextInt(allocs.size()));
        allocs.add("r" + round + "-a" + random.nextInt(1000));
        if (random.nextBoolean()) {
          allocs.add("r" + round + "-b" + random.nextInt(1000));
        }
      }
      List<String> live = List.copyOf(allocs);
      int dice = random.nextInt(100);
      KillAt killAt = dice < 10 ? KillAt.READY : dice < 25 ? KillAt.RECONCILE : KillAt.ACKS;
      int killAfterAcks = 1 + random.nextInt(random.nextBoolean() ? 40 : 400);
      int reconcileAfterAcks = random.nextInt(60);
      kills.merge(killAt, 1, Integer::sum);

      Map<Long, Begun> begun = new HashMap<>();
      Map<PluginType, Set<Long>> sequences = new EnumMap<>(PluginType.class);
      Set<PluginKey> deadKeys = model.keySet().stream()
          .filter(k -> !live.contains(k.allocId())).collect(Collectors.toSet());
      boolean reconcileBegun = false;
      boolean reconcileDone = false;
      List<String> bad = new ArrayList<>();
      int acks = 0;
      boolean ready = false;

      try (ChildJvm child = ChildJvm.start(RegistryHostMain.class, stderr, dataDir.toString(), Long.toString(seed + round),
          Integer.toString(THREADS), String.join(",", live), Integer.toString(reconcileAfterAcks), Integer.toString(round))) {
        String line;
        while ((line = child.readLine()) != null) {
          String[] p = line.split(" ", -1);
          switch (p[0]) {
            case "RESTORED" -> {
              PluginType type = PluginType.parse(p[1]);
              long expected = model.keySet().stream().filter(k -> k.type() == type).count();
              assertEquals(expected, Long.parseLong(p[2]), where + ": restored " + type + " registrations");
            }
            case "READY" -> ready = true;
            case "B" -> {
              PluginKey key = new PluginKey(PluginType.parse(p[3]), p[4], p[5]);
              assertTrue(live.contains(key.allocId()), where + ": the child touched a dead allocation: " + line);
              Op op = Op.valueOf(p[2]);
              begun.put(Long.parseLong(p[1]), new Begun(key, op, op == Op.DEREG ? null : p[6]));
            }
            case "A" -> {
              Begun b = begun.remove(Long.parseLong(p[1]));
              assertNotNull(b, where + ": acknowledgement without a begin: " + line);
              String before = model.get(b.key());
              String expectedKind = switch (b.op()) {
                case REG -> before == null ? "REGISTERED" : "UPDATED";
                case CONFIRM -> "NONE";
                case CONFIRM_RESTORED -> "UPDATED";
                case DEREG -> before == null ? "NONE" : "DEREGISTERED";
              };
              assertEquals(expectedKind, p[2], where + ": " + b + " after durable version " + before);
              if (b.op() == Op.CONFIRM || b.op() == Op.CONFIRM_RESTORED) {
                assertEquals(before, b.version(), where + ": confirm of a version that is not the durable one");
              }
              if (!p[2].equals("NONE")) {
                assertTrue(sequences.computeIfAbsent(b.key().type(), t -> new HashSet<>()).add(Long.parseLong(p[3])),
                    where + ": event sequence " + p[3] + " of " + b.key().type() + " handed out twice");
              }
              if (b.op() == Op.DEREG) {
                model.remove(b.key());
              } else {
                model.put(b.key(), b.version());
              }
              acks++;
            }
            case "RB" -> reconcileBegun = true;
            case "RA" -> {
              Set<PluginKey> dropped = new HashSet<>();
              if (!p[2].isEmpty()) {
                for (String item : p[2].split(",")) {
                  String[] kv = item.split("#");
                  String[] k = kv[0].split("/", 3);
                  dropped.add(new PluginKey(PluginType.parse(k[0]), k[1], k[2]));
                  PluginType type = PluginType.parse(k[0]);
                  assertTrue(sequences.computeIfAbsent(type, t -> new HashSet<>()).add(Long.parseLong(kv[1])),
                      where + ": reconcile event sequence " + kv[1] + " handed out twice");
                }
              }
              assertEquals(Integer.parseInt(p[1]), dropped.size(), where + ": " + line);
              assertEquals(new TreeSet<>(names(deadKeys)), new TreeSet<>(names(dropped)),
                  where + ": reconcile must drop exactly the restored plugins of dead allocations");
              dropped.forEach(model::remove);
              reconciledAway += dropped.size();
              reconcileDone = true;
            }
            case "BAD" -> bad.add(line);
            default -> fail(where + ": unexpected child output: " + line + "\nstderr:\n" + child.stderrTail());
          }
          if (!child.wasKilled() && ready && switch (killAt) {
                case READY -> true;
                case RECONCILE -> reconcileBegun;
                case ACKS -> acks >= killAfterAcks;
              }) {
            child.kill();
          }
        }
        if (!child.wasKilled()) {
          fail(where + ": child exited on its own with " + child.awaitExit() + "; stderr:\n" + child.stderrTail());
        }
        child.awaitExit();
        assertTrue(ready, where + ": child never got ready; stderr:\n" + child.stderrTail());
        assertEquals(List.of(), bad, where + ": the child's subscribers or calls saw contract violations");
      }
      totalAcks += acks;

      // Was a checkpoint in progress at the kill? A half-written one is a .tmp file; a written one whose
      // covered files were not all deleted yet leaves two checkpoints, or segments it covers.
      try (Stream<Path> files = Files.list(dataDir.resolve(JournalStateStore.DIRECTORY))) {
        List<String> names = files.map(f -> f.getFileName().toString()).toList();
        if (names.stream().anyMatch(n -> n.endsWith(".tmp"))
            || names.stream().filter(n -> n.startsWith("checkpoint-")).count() > 1) {
          killsDuringCheckpoint++;
        }
      }

      // Reopen strictly: damage (not a torn tail) fails here instead of being moved aside.
      JournalStateStore reopened;
      try {
        reopened = JournalStateStore.open(dataDir,
            JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(RegistryHostMain.SEGMENT_BYTES));
      } catch (StateFileCorruptException e) {
        Path evidence = keepEvidence(dataDir, seed, round);
        String corruption = where + " (killed " + killAt + (killAt == KillAt.ACKS ? " after " + killAfterAcks : "")
            + ", " + acks + " acks this round): the state file does not open strictly after SIGKILL (" + e.getMessage()
            + "); copy kept in " + evidence;
        throw new AssertionError(corruption, e);
      }
      try (JournalStateStore store = reopened;
          PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
        assertEquals(List.of(), registry.restoreProblems(), where + ": every record must decode");
        Map<String, byte[]> records = new HashMap<>(store.loadAll());
        records.keySet().removeIf(k -> k.startsWith("registry/sequence/")); // the registry's event numbering
        Map<PluginKey, PluginInfo> actual = new HashMap<>();
        for (PluginType t : PluginType.values()) {
          List<PluginInfo> all = registry.listAll(t);
          for (PluginInfo info : all) {
            assertTrue(info.restored(), where + ": " + info.key());
            assertTrue(actual.put(info.key(), info) == null, where + ": key restored twice: " + info.key());
          }
          List<String> names = registry.list(t).stream().map(PluginInfo::name).toList();
          assertEquals(new HashSet<>(names).size(), names.size(), where + ": list(" + t + ") repeats a name: " + names);
        }
        assertEquals(records.size(), actual.size(), where + ": one record per registration, nothing else");
        records.keySet().forEach(k -> assertTrue(k.startsWith(PluginKey.STORE_PREFIX), where + ": stray record " + k));

        Map<PluginKey, Begun> inFlight = new HashMap<>();
        begun.values().forEach(b -> inFlight.put(b.key(), b)); // at most one per key: each key has one thread
        if (reconcileBegun && !reconcileDone) {
          reconcilesCutShort++;
          long present = deadKeys.stream().filter(actual::containsKey).count();
          assertTrue(present == 0 || present == deadKeys.size(),
              where + ": reconcile is one commit, yet " + present + " of " + deadKeys.size() + " dead registrations survived");
        }
        Set<PluginKey> keys = new HashSet<>(model.keySet());
        keys.addAll(inFlight.keySet());
        keys.addAll(actual.keySet());
        for (PluginKey key : keys) {
          PluginInfo found = actual.get(key);
          String foundVersion = found == null ? null : found.version();
          if (found != null) {
            assertEquals(RegistryHostMain.info(key.type(), key.name(), key.allocId(), foundVersion), found.withRestored(false),
                where + ": restored content of " + key);
          }
          String acknowledged = model.get(key);
          Begun pending = inFlight.get(key);
          boolean isAcknowledged = Objects.equals(foundVersion, acknowledged);
          boolean isPending = pending != null && Objects.equals(foundVersion, pending.version());
          boolean isReconciledAway = deadKeys.contains(key) && reconcileBegun && found == null;
          assertTrue(isAcknowledged || isPending || isReconciledAway, where + ", key " + key + ": found " + foundVersion
              + ", acknowledged " + acknowledged + (pending == null ? "" : ", in flight " + pending));
          if (pending != null && !Objects.equals(acknowledged, pending.version())) {
            if (isPending) {
              inFlightLanded++;
            } else {
              inFlightLost++;
            }
          }
          if (found == null) {
            model.remove(key);
          } else {
            model.put(key, foundVersion);
          }
        }
      }
    }
    System.out.printf("crash under load: %d rounds (kills %s), %d acknowledged changes, %d registrations reconciled"
            + " away, %d reconciles cut short; in-flight changes: %d landed, %d did not%n",
        ROUNDS, kills, totalAcks, reconciledAway, reconcilesCutShort, inFlightLanded, inFlightLost);
    System.out.println("crash under load: " + killsDuringCheckpoint + " kill(s) landed while a checkpoint was being"
        + " written or retired");
    assertTrue(totalAcks > ROUNDS * 20, "the children should make progress: " + totalAcks);
  }

  /** Copies the state directory to target/ so that a corrupt file can be examined after the run. */
  private static Path keepEvidence(Path dataDir, long seed, int round) throws IOException {
    Path target = Path.of("target", "crash-evidence", seed + "-round" + round).toAbsolutePath();
    Files.createDirectories(target);
    try (Stream<Path> files = Files.list(dataDir)) {
      for (Path f : files.toList()) {
        Files.copy(f, target.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
      }
    }
    return target;
  }

  private static List<String> names(Set<PluginKey> keys) {
    return keys.stream().map(PluginKey::toString).toList();
  }
}
