package dev.csisupervisor.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.csisupervisor.state.JournalStateStore;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * kill -9 recovery: a child JVM ({@link CrashChildMain}) changes the registry on four threads and is killed
 * with SIGKILL after a random number of acknowledged changes, over and over on the same state file. Every
 * reopen (strict mode: a corrupt file fails the test) must show exactly the acknowledged state; a change that
 * was begun but not acknowledged may be either way.
 */
class CrashRecoveryTest {

  private static final int ROUNDS = 24;
  private static final int THREADS = 4;

  @TempDir Path tmp;

  /** A change the child began: the key and the version it set (null = deregistered). */
  private record Change(PluginKey key, String version) {}

  @Test
  @Timeout(value = 180, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void killedChild_reopensWithExactlyTheAcknowledgedState() throws Exception {
    Path dataDir = tmp.resolve("data");
    Path stderr = tmp.resolve("child-stderr.log");
    Map<PluginKey, String> model = new HashMap<>(); // key -> version, as known to be durable
    Random random = new Random(20240501);
    int totalAcks = 0;
    int unacknowledgedThatLanded = 0;
    int unacknowledgedThatDidNot = 0;

    for (int round = 0; round < ROUNDS; round++) {
      int killAfterAcks = random.nextInt(5) == 0 ? random.nextInt(3) : 1 + random.nextInt(150);
      Process child = new ProcessBuilder(javaBin(), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", "-Xmx96m",
          "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
          "-cp", System.getProperty("java.class.path"), CrashChildMain.class.getName(),
          dataDir.toString(), Long.toString(round), Integer.toString(THREADS))
          .redirectError(ProcessBuilder.Redirect.appendTo(stderr.toFile()))
          .start();
      Map<Long, Change> begun = new HashMap<>();
      int acks = 0;
      boolean ready = false;
      try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        boolean killed = false;
        while ((line = out.readLine()) != null) {
          if (line.equals("READY")) {
            ready = true;
          } else if (line.startsWith("BEGIN ")) {
            String[] p = line.split(" ");
            PluginKey key = new PluginKey(PluginType.parse(p[3]), p[4], p[5]);
            begun.put(Long.parseLong(p[1]), new Change(key, p[2].equals("REG") ? p[6] : null));
          } else if (line.startsWith("ACK ")) {
            Change c = begun.remove(Long.parseLong(line.substring(4)));
            assertNotNull(c, "ACK without BEGIN: " + line);
            if (c.version() == null) {
              model.remove(c.key());
            } else {
              model.put(c.key(), c.version());
            }
            acks++;
          } else {
            fail("unexpected child output: " + line);
          }
          if (!killed && ready && acks >= killAfterAcks) {
            // SIGKILL on Linux. Through the handle: Process.destroyForcibly() would also close our end of the
            // child's stdout, and the lines it wrote before dying must still be read.
            child.toHandle().destroyForcibly();
            killed = true;
          }
        }
        if (!killed) {
          fail("child exited on its own with " + child.waitFor() + "; stderr:\n" + Files.readString(stderr));
        }
      }
      assertTrue(child.waitFor(30, TimeUnit.SECONDS));
      assertTrue(ready, "child never opened the store; stderr:\n" + Files.readString(stderr));
      totalAcks += acks;

      // Reopen strictly: a file MapDB cannot read fails here instead of being quarantined.
      try (JournalStateStore store = JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true));
          PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
        assertEquals(List.of(), registry.restoreProblems(), "round " + round);
        Map<PluginKey, Change> inFlight = new HashMap<>();
        for (Change c : begun.values()) {
          inFlight.put(c.key(), c); // at most one per key: each key belongs to one child thread
        }
        Set<PluginKey> keys = new HashSet<>(model.keySet());
        keys.addAll(inFlight.keySet());
        for (PluginType t : PluginType.values()) {
          registry.listAll(t).forEach(p -> keys.add(p.key()));
        }
        for (PluginKey key : keys) {
          Optional<PluginInfo> actual = registry.pluginForAlloc(key.type(), key.name(), key.allocId());
          String actualVersion = actual.map(PluginInfo::version).orElse(null);
          actual.ifPresent(p -> {
            assertTrue(p.restored());
            assertEquals(CrashChildMain.info(key.type(), key.name(), key.allocId(), p.version()), p.withRestored(false));
          });
          String acknowledged = model.get(key);
          Change pending = inFlight.get(key);
          boolean matchesAcknowledged = java.util.Objects.equals(actualVersion, acknowledged);
          boolean matchesPending = pending != null && java.util.Objects.equals(actualVersion, pending.version());
          assertTrue(matchesAcknowledged || matchesPending, "round " + round + ", key " + key + ": found " + actualVersion
              + ", acknowledged " + acknowledged + (pending == null ? "" : ", or in flight " + pending.version()));
          if (pending != null && !java.util.Objects.equals(acknowledged, pending.version())) {
            if (matchesPending) {
              unacknowledgedThatLanded++;
            } else {
              unacknowledgedThatDidNot++;
            }
          }
          if (actualVersion == null) {
            model.remove(key);
          } else {
            model.put(key, actualVersion);
          }
        }
      }
    }
    System.out.printf("crash test: %d rounds, %d acknowledged changes, unacknowledged in-flight changes: %d landed, %d did not%n",
        ROUNDS, totalAcks, unacknowledgedThatLanded, unacknowledgedThatDidNot);
    assertTrue(totalAcks > ROUNDS * 20, "the child should make progress: " + totalAcks);
  }

  static String javaBin() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }
}
