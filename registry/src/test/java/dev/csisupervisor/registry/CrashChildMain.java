package dev.csisupervisor.registry;

import dev.csisupervisor.state.JournalStateStore;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Child JVM for {@link CrashRecoveryTest}: opens the registry on a MapDB store in {@code args[0]} and, on
 * {@code args[2]} threads, registers, updates and deregisters in a loop until it is killed. Each thread owns
 * its own allocations, so each key's history is sequential. Protocol on stdout, one line each:
 * {@code READY}, then per change {@code BEGIN <id> <REG|DEREG> <type-id> <name> <allocId> <version>} before the
 * call and {@code ACK <id>} after it returned (the change is durable).
 */
public final class CrashChildMain {
  private CrashChildMain() {}

  /** The registration the child writes for a key and version; the test rebuilds it from the protocol line. */
  static PluginInfo info(PluginType type, String name, String allocId, String version) {
    return new PluginInfo(type, name, version, allocId, Path.of("/csi", type.id(), name, allocId + ".sock"),
        Map.of("k", "v"), TestRegistrations.fingerprint(name), PluginHealth.healthy(Instant.EPOCH), false);
  }

  public static void main(String[] args) throws Exception {
    Path dataDir = Path.of(args[0]);
    long seed = Long.parseLong(args[1]);
    int threads = Integer.parseInt(args[2]);
    PrintStream out = System.out;
    JournalStateStore store = JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true));
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    out.println("READY");
    out.flush();
    AtomicLong ids = new AtomicLong();
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread worker = new Thread(() -> {
        Random random = new Random(seed * 31 + thread);
        while (true) {
          PluginType type = PluginType.values()[random.nextInt(2)];
          String name = "n" + random.nextInt(3);
          String alloc = "t" + thread + "-a" + random.nextInt(3);
          long id = ids.incrementAndGet();
          boolean present = registry.pluginForAlloc(type, name, alloc).isPresent();
          if (present && random.nextBoolean()) {
            out.println("BEGIN " + id + " DEREG " + type.id() + " " + name + " " + alloc + " -");
            out.flush();
            registry.deregister(type, name, alloc);
          } else {
            String version = "v" + id;
            out.println("BEGIN " + id + " REG " + type.id() + " " + name + " " + alloc + " " + version);
            out.flush();
            registry.register(info(type, name, alloc, version));
          }
          out.println("ACK " + id);
          out.flush();
        }
      });
      worker.start();
      workers.add(worker);
    }
    for (Thread w : workers) {
      w.join();
    }
  }
}
