package dev.csisupervisor.benchmarks;

import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateChange;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The durable store's kill loop (issue 10): a child JVM changes a {@link JournalStateStore} as fast as it can,
 * in batches of 1 to 4 changes, with small journal segments so that a background checkpoint is written about
 * every 60 changes; the parent SIGKILLs it at a random instant, then the next child opens the same directory
 * (strict mode) and the parent checks it: every acknowledged batch is there, the batch in flight is there
 * whole or not at all, nothing else is. Repeated {@code KILLS} times on one directory, so every open starts
 * from what the previous kill left.
 *
 * <p>Protocol on the child's stdout: {@code OPEN <n> <k=v;...>} after opening (every record), then per batch
 * {@code B <key> <value|->}... {@code C} before {@code apply} and {@code A} after it returned.
 *
 * <p>{@code java -jar csi-benchmarks.jar crash-loop [KILLS] [SEED]}
 */
final class CrashLoop {
  private static final int KEYS = 200;
  private static final long SEGMENT_BYTES = 16 * 1024;

  private CrashLoop() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("child")) {
      child(Path.of(args[1]), Long.parseLong(args[2]));
      return;
    }
    int kills = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
    long seed = args.length > 1 ? Long.parseLong(args[1]) : 1;
    System.out.println(Env.describe());
    Random random = new Random(seed);
    Path dir = Files.createTempDirectory("csi-bench-crash-loop-");
    Map<String, String> model = new HashMap<>();
    int lost = 0;
    int failedOpens = 0;
    int inFlightLanded = 0;
    int inFlightDropped = 0;
    int duringCheckpoint = 0;
    long acks = 0;
    Map<String, String> pending = new LinkedHashMap<>(); // the batch the child printed but did not acknowledge
    boolean pendingInFlight = false; // ... and had started to apply
    long t0 = System.nanoTime();
    String jar = Path.of(CrashLoop.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
    for (int round = 1; round <= kills + 1; round++) {
      Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", jar,
          CrashLoop.class.getName(), "child", dir.toString(), Long.toString(random.nextLong()))
          .redirectError(ProcessBuilder.Redirect.DISCARD).start();
      BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      String open = out.readLine();
      if (open == null || !open.startsWith("OPEN ")) {
        failedOpens++;
        System.out.printf("round %d: the store did not open after the previous kill: %s%n", round, open);
        child.destroyForcibly().waitFor();
        break;
      }
      // What the previous kill left, against what was acknowledged before it.
      Map<String, String> found = parse(open);
      Map<String, String> withPending = new HashMap<>(model);
      if (round > 1) {
        if (found.equals(model)) {
          inFlightDropped += pendingInFlight ? 1 : 0;
        } else if (pendingInFlight && found.equals(applied(model, pending))) {
          inFlightLanded++;
          withPending = found;
        } else {
          lost++;
          System.out.printf("round %d: LOST OR PHANTOM CHANGES: found %d records, acknowledged %d; differing keys %s%n",
              round, found.size(), model.size(), diff(model, found));
        }
      }
      model = found;
      pending = new LinkedHashMap<>();
      pendingInFlight = false;
      if (round == kills + 1) {
        child.destroyForcibly().waitFor();
        break;
      }
      int killAfter = 1 + random.nextInt(300);
      int seen = 0;
      String line;
      while ((line = out.readLine()) != null) {
        if (line.startsWith("B ")) {
          String[] p = line.split(" ", 3);
          pending.put(p[1], p[2].equals("-") ? null : p[2]);
        } else if (line.equals("C")) {
          pendingInFlight = true;
        } else if (line.equals("A")) {
          model = applied(model, pending);
          pending = new LinkedHashMap<>();
          pendingInFlight = false;
          acks++;
          if (++seen == killAfter) {
            busyWaitMicros(random.nextInt(1500));
            // SIGKILL through the handle: Process.destroyForcibly() would also close our end of its stdout, and
            // the lines it wrote before dying must still be read.
            child.toHandle().destroyForcibly();
          }
        }
      }
      child.waitFor(30, TimeUnit.SECONDS);
      try (Stream<Path> files = Files.list(dir.resolve(JournalStateStore.DIRECTORY))) {
        List<String> names = files.map(p -> p.getFileName().toString()).toList();
        if (names.stream().anyMatch(n -> n.endsWith(".tmp"))
            || names.stream().filter(n -> n.startsWith("checkpoint-")).count() > 1) {
          duringCheckpoint++;
        }
      }
      if (round % 100 == 0) {
        System.out.printf(Locale.ROOT, "%d kills, %d acknowledged batches, %.0f s%n", round, acks,
            (System.nanoTime() - t0) / 1e9);
      }
    }
    Fixtures.deleteRecursively(dir);
    System.out.printf(Locale.ROOT, "RESULT crash-loop | %d kills (seed %d) | %d acknowledged batches | lost or phantom"
            + " changes: %d | stores that failed to open: %d | batch in flight at the kill: landed whole %d, absent %d"
            + " | kills during a checkpoint: %d | %.0f s | load %s%n", kills, seed, acks, lost, failedOpens,
        inFlightLanded, inFlightDropped, duringCheckpoint, (System.nanoTime() - t0) / 1e9, Env.loadAverage());
  }

  private static Map<String, String> applied(Map<String, String> model, Map<String, String> batch) {
    Map<String, String> next = new HashMap<>(model);
    batch.forEach((k, v) -> {
      if (v == null) {
        next.remove(k);
      } else {
        next.put(k, v);
      }
    });
    return next;
  }

  private static List<String> diff(Map<String, String> a, Map<String, String> b) {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < KEYS; i++) {
      String k = "k" + i;
      if (!Objects.equals(a.get(k), b.get(k))) {
        keys.add(k);
      }
    }
    return keys.size() > 10 ? keys.subList(0, 10) : keys;
  }

  private static Map<String, String> parse(String open) {
    Map<String, String> m = new HashMap<>();
    String[] p = open.split(" ", 3);
    if (p.length == 3 && !p[2].isEmpty()) {
      for (String kv : p[2].split(";")) {
        int eq = kv.indexOf('=');
        m.put(kv.substring(0, eq), kv.substring(eq + 1));
      }
    }
    return m;
  }

  private static void busyWaitMicros(long micros) {
    long end = System.nanoTime() + micros * 1000;
    while (System.nanoTime() < end) {
      Thread.onSpinWait();
    }
  }

  private static void child(Path dir, long seed) {
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    JournalStateStore store;
    try {
      store = JournalStateStore.open(dir,
          JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(SEGMENT_BYTES));
    } catch (RuntimeException e) {
      out.println("FAILED " + e.toString().replace('\n', ' '));
      out.flush();
      System.exit(1);
      return;
    }
    StringBuilder open = new StringBuilder();
    store.loadAll().forEach((k, v) -> open.append(open.length() == 0 ? "" : ";").append(k).append('=')
        .append(new String(v, StandardCharsets.UTF_8)));
    out.println("OPEN " + store.lastSequence() + " " + open);
    out.flush();
    Random random = new Random(seed);
    long counter = 0;
    while (true) {
      int n = 1 + random.nextInt(4);
      List<StateChange> batch = new ArrayList<>(n);
      Map<String, Boolean> used = new HashMap<>();
      for (int i = 0; i < n; i++) {
        String key = "k" + random.nextInt(KEYS);
        if (used.put(key, true) != null) {
          continue;
        }
        if (random.nextInt(6) == 0) {
          batch.add(new StateChange.Delete(key));
          out.println("B " + key + " -");
        } else {
          String value = "s" + seed % 1000 + "c" + (counter++) + "x".repeat(random.nextInt(250));
          batch.add(new StateChange.Put(key, value.getBytes(StandardCharsets.UTF_8)));
          out.println("B " + key + " " + value);
        }
      }
      out.println("C");
      out.flush();
      store.apply(batch);
      out.println("A");
      out.flush();
      if (out.checkError()) {
        System.exit(3); // the parent is gone: never outlive it
      }
    }
  }
}
