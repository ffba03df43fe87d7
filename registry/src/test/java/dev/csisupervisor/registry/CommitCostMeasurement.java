package dev.csisupervisor.registry;

import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Throw-away measurement (not a test, asserts nothing): durable commit cost of one change with a single
 * writer, and changes/s with concurrent writers sharing group commits, on a MapDB file.
 * Run: java -cp <test classpath> dev.csisupervisor.registry.CommitCostMeasurement [dir] [writers...]
 */
public final class CommitCostMeasurement {
  private CommitCostMeasurement() {}

  /** Counts store commits to report the average batch size. */
  static final class CountingStore implements StateStore {
    final StateStore d;
    final AtomicLong commits = new AtomicLong();
    final AtomicLong changes = new AtomicLong();

    CountingStore(StateStore d) {
      this.d = d;
    }

    @Override public void put(String k, byte[] v) { commits.incrementAndGet(); changes.incrementAndGet(); d.put(k, v); }
    @Override public void delete(String k) { commits.incrementAndGet(); changes.incrementAndGet(); d.delete(k); }
    @Override public Optional<byte[]> get(String k) { return d.get(k); }
    @Override public Map<String, byte[]> loadAll() { return d.loadAll(); }
    @Override public void apply(List<StateChange> c) {
      if (!c.isEmpty()) {
        commits.incrementAndGet();
        changes.addAndGet(c.size());
      }
      d.apply(c);
    }
    @Override public void close() { d.close(); }
  }

  public static void main(String[] args) throws Exception {
    Path base = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("commit-cost");
    int ops = 2000;

    try (JournalStateStore store = JournalStateStore.open(base.resolve("raw"))) {
      byte[] value = PluginRecordCodec.encode(TestPlugins.node("ebs", "a1"), 1);
      for (int i = 0; i < 200; i++) {
        store.put("warm/" + (i % 50), value);
      }
      long t0 = System.nanoTime();
      for (int i = 0; i < ops; i++) {
        store.put("plugin/csi-node/p" + (i % 50) + "/a", value);
      }
      long ns = System.nanoTime() - t0;
      System.out.printf("raw JournalStateStore.put, 1 writer: %.0f us/commit (%.0f commits/s), record %d bytes%n",
          ns / 1000.0 / ops, ops * 1e9 / ns, value.length);
    }

    try (JournalStateStore store = JournalStateStore.open(base.resolve("single"));
        PluginRegistry registry = PluginRegistry.builder().stateStore(store).build()) {
      for (int i = 0; i < 200; i++) {
        registry.register(TestPlugins.node("warm" + (i % 20), "a").withVersion("w" + i));
      }
      long t0 = System.nanoTime();
      for (int i = 0; i < ops; i++) {
        registry.register(TestPlugins.node("p" + (i % 50), "a").withVersion("v" + i));
      }
      long ns = System.nanoTime() - t0;
      System.out.printf("registry.register, 1 writer: %.0f us/change (%.0f changes/s)%n", ns / 1000.0 / ops, ops * 1e9 / ns);
    }

    int[] writerCounts = {2, 4, 16};
    if (args.length > 1) {
      writerCounts = new int[args.length - 1];
      for (int i = 1; i < args.length; i++) {
        writerCounts[i - 1] = Integer.parseInt(args[i]);
      }
    }
    for (int writers : writerCounts) {
      CountingStore counting = new CountingStore(JournalStateStore.open(base.resolve("group-" + writers)));
      try (PluginRegistry registry = PluginRegistry.builder().stateStore(counting).closeStateStore(true).build()) {
        int perWriter = Math.max(100, 4 * ops / writers);
        CyclicBarrier barrier = new CyclicBarrier(writers + 1);
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
          int writer = w;
          Thread t = new Thread(() -> {
            try {
              barrier.await();
              for (int i = 0; i < perWriter; i++) {
                registry.register(TestPlugins.node("w" + writer + "-p" + (i % 10), "a").withVersion("v" + i));
              }
            } catch (Exception e) {
              throw new RuntimeException(e);
            }
          });
          t.start();
          threads.add(t);
        }
        barrier.await();
        long t0 = System.nanoTime();
        for (Thread t : threads) {
          t.join();
        }
        long ns = System.nanoTime() - t0;
        long total = (long) perWriter * writers;
        System.out.printf("registry.register, %d writers: %.0f changes/s, %d commits for %d changes (%.1f changes/commit), %.0f us/commit%n",
            writers, total * 1e9 / ns, counting.commits.get(), counting.changes.get(),
            (double) counting.changes.get() / counting.commits.get(), ns / 1000.0 / counting.commits.get());
      }
    }
  }
}
