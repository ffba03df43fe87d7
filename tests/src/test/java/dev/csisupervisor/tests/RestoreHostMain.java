package dev.csisupervisor.tests;

import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateChange;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Child JVM of {@link RestoreKillTest}, {@code restore <dataDir> <liveAllocs>}: what an agent does when it starts.
 * Opens the state file strictly, restores the registry, and reconciles against the first {@code liveAllocs}
 * allocations (dropping the rest in one commit). Prints each phase with milliseconds since main started:
 * {@code OPENING 0}, {@code OPENED <ms>}, {@code RESTORED <count> <ms>}, {@code RB <ms>}, {@code RA <dropped> <ms>},
 * {@code DONE <ms> <restoreProblems>}; then waits to be killed.
 */
public final class RestoreHostMain {
  private RestoreHostMain() {}

  static String alloc(int i) {
    return "a" + i;
  }

  static String name(int i) {
    return "n" + i;
  }

  /**
   * Writes {@code 2 types × names × allocs} registrations into a new MapDB state file in {@code dataDir}: encoded by
   * a real registry over an in-memory store, then copied in one commit, and closed.
   */
  static void generate(Path dataDir, int names, int allocs) {
    InMemoryStateStore memory = new InMemoryStateStore();
    try (PluginRegistry encoder = PluginRegistry.builder().stateStore(memory).build()) {
      for (PluginType t : PluginType.values()) {
        for (int n = 0; n < names; n++) {
          for (int a = 0; a < allocs; a++) {
            encoder.register(RegistryHostMain.info(t, name(n), alloc(a), "v" + n + "." + a));
          }
        }
      }
    }
    List<StateChange> changes = new ArrayList<>();
    memory.loadAll().forEach((k, v) -> changes.add(new StateChange.Put(k, v)));
    try (JournalStateStore store = JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true))) {
      store.apply(changes);
    }
  }

  public static void main(String[] args) throws Exception {
    long t0 = System.nanoTime();
    PrintStream out = System.out;
    Path dataDir = Path.of(args[1]);
    int liveAllocs = Integer.parseInt(args[2]);
    line(out, "OPENING 0");
    JournalStateStore store = JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true));
    line(out, "OPENED " + ms(t0));
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    int restored = 0;
    for (PluginType t : PluginType.values()) {
      restored += registry.listAll(t).size();
    }
    line(out, "RESTORED " + restored + " " + ms(t0));
    Set<String> live = new HashSet<>();
    for (int a = 0; a < liveAllocs; a++) {
      live.add(alloc(a));
    }
    line(out, "RB " + ms(t0));
    List<PluginEvent> dropped = registry.reconcile(live);
    line(out, "RA " + dropped.size() + " " + ms(t0));
    line(out, "DONE " + ms(t0) + " " + registry.restoreProblems().size());
    Thread.currentThread().join();
  }

  private static long ms(long t0) {
    return (System.nanoTime() - t0) / 1_000_000;
  }

  private static void line(PrintStream out, String s) {
    out.println(s);
    out.flush();
  }
}
