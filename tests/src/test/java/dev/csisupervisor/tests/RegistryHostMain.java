package dev.csisupervisor.tests;

import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.JournalStateStore;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * Child JVM of {@link CrashRecoveryUnderLoadTest}: a registry host, as the agent is one, restarted after every
 * SIGKILL on the same state file. It restores the registry from a strict MapDB store, subscribes eight
 * {@link RegistryView}s, then runs the agent's restart flow under load: worker threads keep registering, updating,
 * confirming (re-registering unchanged content) and deregistering the plugins of the live allocations, while
 * {@code reconcile(liveAllocs)} drops the restored registrations of dead allocations concurrently.
 *
 * <p>Arguments: {@code dataDir seed threads liveAllocs(comma-separated) reconcileAfterAcks round}. Each live
 * allocation belongs to one worker thread, so every key's history is sequential. Protocol on stdout:
 * <pre>
 * RESTORED &lt;type-id&gt; &lt;count&gt;           after restore, per type
 * READY                                     subscribers attached, workers starting
 * B &lt;id&gt; REG|CONFIRM|CONFIRM_RESTORED|DEREG &lt;type-id&gt; &lt;name&gt; &lt;alloc&gt; &lt;version&gt;   before a call
 * A &lt;id&gt; REGISTERED|UPDATED|DEREGISTERED|NONE &lt;seq&gt;                 after it returned (durable)
 * RB                                        before reconcile
 * RA &lt;count&gt; &lt;type-id&gt;/&lt;name&gt;/&lt;alloc&gt;#&lt;seq&gt;,...     after reconcile returned
 * BAD &lt;message&gt;                             a subscriber saw an event that breaks the contract
 * </pre>
 */
public final class RegistryHostMain {
  static final List<String> NAMES = List.of("n0", "n1", "n2");

  private RegistryHostMain() {}

  /** The registration written for a key and version; the test rebuilds it from the protocol. */
  static PluginInfo info(PluginType type, String name, String allocId, String version) {
    return new PluginInfo(type, name, version, allocId, Path.of("/csi", type.id(), name, "csi.sock"),
        Map.of("provider", name + ".csi.dev", "alloc", allocId),
        new Fingerprint(name + ".csi.dev", version, Map.of("build", version), Set.of("CONTROLLER_SERVICE"),
            Set.of("CREATE_DELETE_VOLUME"), Set.of("STAGE_UNSTAGE_VOLUME"), "node-1", 0, Map.of("zone", "z1")),
        PluginHealth.healthy(Instant.EPOCH), false);
  }

  static final long SEGMENT_BYTES = 8 * 1024;

  public static void main(String[] args) throws Exception {
    Path dataDir = Path.of(args[0]);
    long seed = Long.parseLong(args[1]);
    int threads = Integer.parseInt(args[2]);
    List<String> live = Arrays.asList(args[3].split(","));
    long reconcileAfterAcks = Long.parseLong(args[4]);
    int round = Integer.parseInt(args[5]);
    PrintStream out = System.out;

    // Small segments: under the load a segment fills every few dozen changes, so background checkpoints run all
    // the time and many kills land in the middle of one (writing, renaming, or deleting what it covers).
    JournalStateStore store = JournalStateStore.open(dataDir,
        JournalStateStore.Options.defaults().withStrict(true).withSegmentBytes(SEGMENT_BYTES));
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).build();
    for (PluginType t : PluginType.values()) {
      List<PluginInfo> restored = registry.listAll(t);
      for (PluginInfo p : restored) {
        if (!p.restored()) {
          line(out, "BAD restored entry " + p.key() + " is not marked restored");
        }
      }
      line(out, "RESTORED " + t.id() + " " + restored.size());
    }
    if (!registry.restoreProblems().isEmpty()) {
      line(out, "BAD restore problems: " + registry.restoreProblems());
    }

    // Subscribers: half deliver on the committing thread, half on a small pool.
    ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "subscribers");
      t.setDaemon(true);
      return t;
    });
    List<RegistryView> views = new ArrayList<>();
    for (PluginType t : PluginType.values()) {
      for (int i = 0; i < 4; i++) {
        RegistryView v = new RegistryView(t, problem -> line(out, "BAD " + problem));
        v.subscribe(registry, i % 2 == 0 ? Runnable::run : pool);
        if (v.content().size() != registry.listAll(t).size()) {
          line(out, "BAD snapshot of " + t + " holds " + v.content().size() + " entries, restore gave "
              + registry.listAll(t).size());
        }
        views.add(v);
      }
    }
    line(out, "READY");

    AtomicLong ids = new AtomicLong();
    AtomicLong acks = new AtomicLong();
    AtomicBoolean reconcileStarted = new AtomicBoolean();
    Set<String> liveSet = Set.copyOf(live);
    Runnable reconcile = () -> {
      line(out, "RB");
      List<PluginEvent> events = registry.reconcile(liveSet);
      line(out, "RA " + events.size() + " " + events.stream()
          .map(e -> e.type().id() + "/" + e.plugin().name() + "/" + e.plugin().allocId() + "#" + e.sequence())
          .collect(Collectors.joining(",")));
    };
    if (reconcileAfterAcks == 0 && reconcileStarted.compareAndSet(false, true)) {
      new Thread(reconcile, "reconcile").start();
    }

    for (int t = 0; t < threads; t++) {
      List<String> mine = new ArrayList<>();
      for (int i = t; i < live.size(); i += threads) {
        mine.add(live.get(i));
      }
      if (mine.isEmpty()) {
        continue;
      }
      Random random = new Random(seed * 1_000_003L + t);
      Map<PluginKey, String> versions = new HashMap<>();
      for (PluginType type : PluginType.values()) {
        for (PluginInfo p : registry.listAll(type)) {
          if (mine.contains(p.allocId())) {
            versions.put(p.key(), p.version());
          }
        }
      }
      Thread worker = new Thread(() -> {
        while (true) {
          PluginType type = PluginType.values()[random.nextInt(2)];
          String name = NAMES.get(random.nextInt(NAMES.size()));
          String alloc = mine.get(random.nextInt(mine.size()));
          PluginKey key = new PluginKey(type, name, alloc);
          String current = versions.get(key);
          long id = ids.incrementAndGet();
          int dice = random.nextInt(100);
          Optional<PluginEvent> event;
          String expected;
          if (current != null && dice < 35) {
            line(out, "B " + id + " DEREG " + type.id() + " " + name + " " + alloc + " -");
            event = registry.deregister(type, name, alloc);
            versions.remove(key);
            expected = "DEREGISTERED";
          } else if (current != null && dice < 55) {
            // The first re-registration of a restored entry confirms it: subscribers are told
            // (UPDATED, restored=false); later ones change nothing.
            boolean restored = registry.listAll(type).stream()
                .anyMatch(p -> p.key().equals(key) && p.restored());
            line(out, "B " + id + " " + (restored ? "CONFIRM_RESTORED" : "CONFIRM") + " "
                + type.id() + " " + name + " " + alloc + " " + current);
            event = registry.register(info(type, name, alloc, current));
            expected = restored ? "UPDATED" : "NONE";
          } else if (current == null && dice < 5) {
            line(out, "B " + id + " DEREG " + type.id() + " " + name + " " + alloc + " -");
            event = registry.deregister(type, name, alloc);
            expected = "NONE";
          } else {
            String version = "r" + round + "-" + id;
            line(out, "B " + id + " REG " + type.id() + " " + name + " " + alloc + " " + version);
            event = registry.register(info(type, name, alloc, version));
            versions.put(key, version);
            expected = current == null ? "REGISTERED" : "UPDATED";
          }
          String kind = event.map(e -> e.kind().name()).orElse("NONE");
          line(out, "A " + id + " " + kind + " " + event.map(PluginEvent::sequence).orElse(0L));
          if (!kind.equals(expected)) {
            line(out, "BAD call " + id + " on " + key + " returned " + kind + ", expected " + expected);
          }
          if (acks.incrementAndGet() == reconcileAfterAcks && reconcileStarted.compareAndSet(false, true)) {
            new Thread(reconcile, "reconcile").start();
          }
        }
      }, "worker-" + t);
      worker.start();
    }
    // Runs until SIGKILLed; the workers never end.
    Thread.currentThread().join();
  }

  private static void line(PrintStream out, String s) {
    // One println is atomic (PrintStream locks itself); flush so that what was printed survives the kill.
    synchronized (out) {
      out.println(s);
      out.flush();
    }
  }
}
