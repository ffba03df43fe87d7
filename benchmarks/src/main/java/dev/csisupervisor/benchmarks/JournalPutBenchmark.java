package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Benchmark 2, the store's share: one durable {@link JournalStateStore#put} of a registration record (as the
 * registry encodes it, ~400 bytes), single writer, no registry in front. Read it against the bare write + fsync
 * ({@link FsyncBaselineBenchmark}) and a whole registry change ({@link RegistryChangeBenchmark}) of the same run:
 * the gap to the first is the journal's framing, the gap to the second the registry's own work (and its second
 * record: a change also writes its type's event sequence, in the same commit). The keys cycle over 50 names, so
 * the store stays small. Sample mode: JMH reports p50/p99 per put.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class JournalPutBenchmark {
  private static final int KEYS = 50;

  private Path dir;
  private JournalStateStore store;
  private String[] keys;
  private byte[] record;
  private int next;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    // The record exactly as the registry writes it: let a registry encode one into an in-memory store.
    InMemoryStateStore memory = new InMemoryStateStore();
    try (PluginRegistry registry = PluginRegistry.builder().stateStore(memory).build()) {
      registry.register(Fixtures.plugin(Fixtures.name(0), Fixtures.alloc(0)));
    }
    // Besides the registration's record, the store holds the type's event sequence: take the former.
    String key = memory.loadAll().keySet().stream().filter(k -> k.startsWith("plugin/")).findFirst()
        .orElseThrow(() -> new IllegalStateException("no plugin record in " + memory.loadAll().keySet()));
    record = memory.get(key).orElseThrow();
    keys = new String[KEYS];
    for (int i = 0; i < KEYS; i++) {
      keys[i] = key + "-" + i;
    }
    dir = Files.createTempDirectory("csi-bench-put-");
    store = JournalStateStore.open(dir.resolve("data"));
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    store.close();
    Fixtures.deleteRecursively(dir);
  }

  /** One durable put: returns once the record is written and forced. */
  @Benchmark
  public int put() {
    store.put(keys[next], record);
    next = (next + 1) % KEYS;
    return next;
  }
}
