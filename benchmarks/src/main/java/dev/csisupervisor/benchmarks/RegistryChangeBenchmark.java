package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
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

/**
 * Benchmark 2: the cost of one registry change (a register of a new key, or a deregister of it)
 * with {@code size} registrations already in the registry, single writer, no subscribers.
 *
 * <p>Every invocation is exactly one change and one commit: invocations alternate between
 * registering an extra plugin and deregistering it again, so the registry stays at {@code size}
 * (+1). With {@code store=durable} the registry is restored from a journal store holding {@code size}
 * registrations (a copy of a template, see {@link Fixtures}); each change is a durable WAL commit.
 * With {@code store=memory} it runs over {@link InMemoryStateStore}: the registry's own cost.
 * Sample mode: JMH reports p50/p99 per change.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class RegistryChangeBenchmark {

  @Param({"10", "1000", "10000", "100000"})
  public int size;

  @Param({"durable", "memory"})
  public String store;

  private static final int EXTRA = 1024;

  private Path dir;
  private StateStore stateStore;
  private PluginRegistry registry;
  private PluginInfo[] extra;
  private int next;
  private boolean registered;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    switch (store) {
      case "durable" -> {
        dir = Files.createTempDirectory("csi-bench-change-");
        Fixtures.stateDirWith(size, dir.resolve("data"));
        stateStore = JournalStateStore.open(dir.resolve("data"));
        registry = PluginRegistry.builder().stateStore(stateStore).build();
      }
      case "memory" -> {
        stateStore = new InMemoryStateStore();
        registry = PluginRegistry.builder().stateStore(stateStore).build();
        for (int i = 0; i < size; i++) {
          registry.register(Fixtures.plugin(Fixtures.name(i), Fixtures.alloc(i)));
        }
      }
      default -> throw new IllegalArgumentException("store must be durable or memory, got " + store);
    }
    int present = registry.listAll(PluginType.CSI_NODE).size();
    if (present != size) {
      throw new IllegalStateException("expected " + size + " registrations, found " + present);
    }
    extra = new PluginInfo[EXTRA];
    for (int i = 0; i < EXTRA; i++) {
      extra[i] = Fixtures.plugin("bench-extra-" + i, "alloc-extra-" + i);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    registry.close();
    stateStore.close();
    if (dir != null) {
      Fixtures.deleteRecursively(dir);
    }
  }

  /** One change: register the next extra plugin, or deregister the one registered last time. */
  @Benchmark
  public PluginEvent change() {
    PluginInfo p = extra[next];
    Optional<PluginEvent> event;
    if (!registered) {
      event = registry.register(p);
    } else {
      event = registry.deregister(p.type(), p.name(), p.allocId());
      next = (next + 1) % EXTRA;
    }
    registered = !registered;
    // Every invocation must be a real change (and so a commit), or the numbers would flatter us.
    return event.orElseThrow(() -> new IllegalStateException("invocation changed nothing: " + p.key()));
  }
}
