package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Benchmark 4: open a journal store (checkpoint + journal) holding {@code SIZE} registrations and build a ready
 * registry from it (the store's open scans every record; the registry decodes every record and
 * indexes it). Each round opens a fresh copy of the same template file. Round 1 runs in a cold JVM
 * (class loading, interpreter) — the situation of an agent that just restarted — the later rounds
 * are warm. Heap: used heap after a full GC with the registry open, minus the same before opening.
 */
final class Restore {
  private Restore() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    if (args.length < 2) {
      throw new IllegalArgumentException("usage: restore quick|full SIZE");
    }
    int size = Integer.parseInt(args[1]);
    int rounds = quick ? 5 : 11;
    System.out.println(Env.describe());
    Path template = Fixtures.template(size);
    Path work = Files.createTempDirectory("csi-bench-restore-");
    long[] open = new long[rounds];
    long[] build = new long[rounds];
    long[] total = new long[rounds];
    long[] heap = new long[rounds];
    try {
      for (int r = 0; r < rounds; r++) {
        Path dir = Fixtures.stateDirWith(size, work.resolve("round-" + r));
        long heapBefore = usedHeapAfterGc();
        long t0 = System.nanoTime();
        JournalStateStore store = JournalStateStore.open(dir);
        long t1 = System.nanoTime();
        PluginRegistry registry = PluginRegistry.builder().stateStore(store).closeStateStore(true).build();
        long t2 = System.nanoTime();
        int restored = registry.listAll(PluginType.CSI_NODE).size();
        if (restored != size) {
          throw new IllegalStateException("restored " + restored + " registrations, expected " + size);
        }
        heap[r] = usedHeapAfterGc() - heapBefore;
        open[r] = t1 - t0;
        build[r] = t2 - t1;
        total[r] = t2 - t0;
        registry.close();
        Fixtures.deleteRecursively(dir);
        System.out.printf(Locale.ROOT, "round %d: store open %s ms + registry build %s ms = %s ms; heap +%.1f MiB%n",
            r + 1, Stats.ms(open[r]), Stats.ms(build[r]), Stats.ms(total[r]), heap[r] / 1048576.0);
      }
    } finally {
      Fixtures.deleteRecursively(work);
    }
    String warm = "not measured (quick mode)";
    long heapP50 = heap[0];
    if (rounds > 1) {
      // round 1 is cold, the rest warm
      warm = new Stats(java.util.Arrays.copyOfRange(total, 1, rounds)).describeMillis();
      heapP50 = new Stats(java.util.Arrays.copyOfRange(heap, 1, rounds)).p50();
    }
    System.out.printf(Locale.ROOT,
        "RESULT restore | %d registrations, state %.1f MiB | cold (first in JVM): %s ms (open %s + build %s) | warm: %s"
            + " | heap retained %.1f MiB (%.0f bytes/registration) | load %s%n",
        size, fileSize(template) / 1048576.0, Stats.ms(total[0]), Stats.ms(open[0]), Stats.ms(build[0]),
        warm, heapP50 / 1048576.0, (double) heapP50 / size, Env.loadAverage());
  }

  static long usedHeapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private static long fileSize(Path dir) throws IOException {
    long sum = 0;
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        sum += Files.isRegularFile(f) ? Files.size(f) : 0;
      }
    }
    return sum;
  }
}
