package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * Benchmark 2 (concurrent part): changes/s with 16 writer threads on one registry holding
 * {@code size} registrations. Each writer alternates register/deregister of its own keys, so every
 * invocation is one change; each call returns only once its change is durable. With
 * {@code store=durable} the registry's group commit lets one journal write + fsync carry every change waiting
 * at that moment; at the end of each iteration the average number of changes per commit is printed.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Threads(16)
public class ConcurrentWritersBenchmark {

  @Param({"1000"})
  public int size;

  @Param({"durable", "memory"})
  public String store;

  private Path dir;
  private CountingStateStore counting;
  private PluginRegistry registry;
  private final AtomicInteger writerIds = new AtomicInteger();

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    StateStore base;
    if (store.equals("durable")) {
      dir = Files.createTempDirectory("csi-bench-writers-");
      Fixtures.stateDirWith(size, dir.resolve("data"));
      base = JournalStateStore.open(dir.resolve("data"));
    } else if (store.equals("memory")) {
      base = new InMemoryStateStore();
    } else {
      throw new IllegalArgumentException("store must be durable or memory, got " + store);
    }
    counting = new CountingStateStore(base);
    registry = PluginRegistry.builder().stateStore(counting).build();
    if (store.equals("memory")) {
      for (int i = 0; i < size; i++) {
        registry.register(Fixtures.plugin(Fixtures.name(i), Fixtures.alloc(i)));
      }
    }
  }

  @Setup(Level.Iteration)
  public void resetCounters() {
    counting.reset();
  }

  @TearDown(Level.Iteration)
  public void printBatching() {
    long commits = counting.commits();
    if (commits > 0) {
      System.out.printf(Locale.ROOT, "%n[group commit] %d changes in %d commits: %.1f changes per commit%n",
          counting.changes(), commits, (double) counting.changes() / commits);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    registry.close();
    counting.close();
    if (dir != null) {
      Fixtures.deleteRecursively(dir);
    }
  }

  /** One writer thread's own keys. */
  @State(Scope.Thread)
  public static class Writer {
    private static final int KEYS = 64;
    PluginInfo[] keys;
    int next;
    boolean registered;

    @Setup(Level.Trial)
    public void setUp(ConcurrentWritersBenchmark shared) {
      int id = shared.writerIds.getAndIncrement();
      keys = new PluginInfo[KEYS];
      for (int i = 0; i < KEYS; i++) {
        keys[i] = Fixtures.plugin("writer-" + id + "-" + i, "alloc-w" + id + "-" + i);
      }
    }
  }

  @Benchmark
  public PluginEvent change(Writer w) {
    PluginInfo p = w.keys[w.next];
    Optional<PluginEvent> event;
    if (!w.registered) {
      event = registry.register(p);
    } else {
      event = registry.deregister(p.type(), p.name(), p.allocId());
      w.next = (w.next + 1) % Writer.KEYS;
    }
    w.registered = !w.registered;
    return event.orElseThrow(() -> new IllegalStateException("invocation changed nothing: " + p.key()));
  }
}
