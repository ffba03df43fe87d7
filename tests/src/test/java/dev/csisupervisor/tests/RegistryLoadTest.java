package dev.csisupervisor.tests;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.testing.TestSeed;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Load: 16 threads × 10,000 mixed operations on one registry with 50 subscribers, then the final state must agree
 * everywhere: the registry's memory, the state store (read back by a fresh registry), the replay of every event
 * handed back to callers, and every subscriber's reconstructed view. Threads share keys on purpose, so the same key
 * is registered, updated and deregistered concurrently.
 *
 * <p>Mixed operations: register (a few versions and health states per key, so some are no-ops), deregister
 * (known and unknown keys), re-register of the current content, reads (find, list, listAll, with their own
 * invariants), and subscription churn (short-lived subscribers that check their own stream). A
 * subscriber that falls behind its backlog bound re-subscribes, as the contract tells it to.
 *
 * <p>Seeded ({@link TestSeed}: fixed unless {@code -Dcsi.test.seed=random}, printed on failure):
 * {@code -Dcsi.test.seed=N} replays the operations (the interleaving is up to the machine).
 */
@ExtendWith(TestSeed.OnFailure.class)
class RegistryLoadTest {
  private static final int NAMES = 20;
  private static final int ALLOCS = 20;

  @TempDir Path tmp;
  private final List<ExecutorService> pools = new ArrayList<>();

  @AfterEach
  void tearDown() throws InterruptedException {
    for (ExecutorService pool : pools) {
      pool.shutdownNow();
      pool.awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void sixteenThreadsTenThousandOpsFiftySubscribers_inMemory_everyViewAgrees() throws Exception {
    long seed = TestSeed.value();
    InMemoryStateStore store = new InMemoryStateStore();
    Result r = run(seed, store, 16, 10_000, 50, () -> store);
    System.out.printf("load (in-memory): seed %d, %d ops in %d ms (%.0f ops/s), %d events, %d deliveries, %d lags,"
            + " %d commits%n", seed, r.ops, r.millis, r.ops * 1000.0 / r.millis, r.events, r.deliveries, r.lags,
        store.commitCount());
  }

  @Test
  @Timeout(value = 120, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
  void sixteenThreadsMixedOpsTenSubscribers_mapDb_fileAgreesAfterReopen() throws Exception {
    long seed = TestSeed.value();
    Path dir = tmp.resolve("data");
    JournalStateStore store = JournalStateStore.open(dir, JournalStateStore.Options.defaults().withStrict(true));
    Result r = run(seed, store, 16, 200, 10,
        () -> JournalStateStore.open(dir, JournalStateStore.Options.defaults().withStrict(true)));
    System.out.printf("load (MapDB): seed %d, %d ops in %d ms (%.0f ops/s), %d events, %d deliveries%n", seed, r.ops,
        r.millis, r.ops * 1000.0 / r.millis, r.events, r.deliveries);
  }

  private record Result(long ops, long millis, long events, long deliveries, long lags) {}

  /**
   * Runs the load and checks every agreement. {@code reopen} gives the store to restore from afterwards: the same
   * in-memory store, or the MapDB file opened anew once the first store is closed.
   */
  private Result run(long seed, StateStore store, int threads, int opsPerThread, int subscriberCount,
      Supplier<StateStore> reopen) throws Exception {
    String where = TestSeed.describe();
    System.out.println("load " + where);
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).maxSubscriberBacklog(2_000).build();
    ExecutorService delivery = pool(4, "delivery");
    List<String> problems = new CopyOnWriteArrayList<>();
    List<RegistryView> views = new ArrayList<>();
    for (int i = 0; i < subscriberCount; i++) {
      PluginType type = PluginType.values()[i % 2];
      // One in five delivers on the committing thread; the rest share a 4-thread pool.
      views.add(new RegistryView(type, problems::add).subscribe(registry, i % 5 == 0 ? Runnable::run : delivery));
    }

    Map<PluginType, Map<Long, PluginEvent>> handedBack = new EnumMap<>(PluginType.class);
    for (PluginType t : PluginType.values()) {
      handedBack.put(t, new ConcurrentHashMap<>());
    }
    AtomicLong churned = new AtomicLong();
    ExecutorService workers = pool(threads, "load");
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      Random random = new Random(seed * 7919 + t);
      done.add(workers.submit(() -> {
        start.await();
        List<RegistryView> temporary = new ArrayList<>();
        for (int op = 0; op < opsPerThread; op++) {
          PluginType type = PluginType.values()[random.nextInt(2)];
          String name = "p" + random.nextInt(NAMES);
          String alloc = "alloc-" + random.nextInt(ALLOCS);
          int dice = random.nextInt(100);
          Optional<PluginEvent> event = Optional.empty();
          if (dice < 45 || dice >= 95) {
            event = registry.register(info(type, name, alloc, random.nextInt(4), random.nextInt(5) != 0));
          } else if (dice < 70) {
            event = registry.deregister(type, name, alloc);
          } else if (dice < 75) {
            // Unknown allocation: never anything to remove.
            Optional<PluginEvent> none = registry.deregister(type, name, "gone-" + random.nextInt(ALLOCS));
            assertTrue(none.isEmpty(), "deregister of an unknown key returned " + none);
          } else if (dice < 79) {
            Optional<PluginInfo> current = registry.pluginForAlloc(type, name, alloc);
            if (current.isPresent()) {
              event = registry.register(current.get()); // same content: a no-op unless another thread raced it
            }
          } else if (dice < 94) {
            read(registry, type, name, random);
          } else {
            temporary.add(new RegistryView(type, problems::add).subscribe(registry, delivery));
            churned.incrementAndGet();
            if (temporary.size() > 2) {
              temporary.remove(0).close();
            }
          }
          event.ifPresent(e -> {
            PluginEvent previous = handedBack.get(e.type()).put(e.sequence(), e);
            assertTrue(previous == null, "sequence " + e.sequence() + " of " + e.type() + " handed to two callers");
          });
        }
        temporary.forEach(RegistryView::close);
        return null;
      }));
    }
    long t0 = System.nanoTime();
    start.countDown();
    for (Future<?> f : done) {
      f.get();
    }
    long millis = (System.nanoTime() - t0) / 1_000_000;

    // Every event was handed back to exactly one caller, and the sequence has no gaps.
    Map<PluginType, Map<PluginKey, PluginInfo>> replayed = new EnumMap<>(PluginType.class);
    long events = 0;
    for (PluginType t : PluginType.values()) {
      TreeMap<Long, PluginEvent> byseq = new TreeMap<>(handedBack.get(t));
      long n = byseq.size();
      events += n;
      // n distinct sequences, all >= 1, the highest n: exactly 1..n.
      long highest = byseq.isEmpty() ? 0L : byseq.lastKey();
      assertEquals(n, highest, where + ": " + t + " sequences handed back are not 1.." + n);
      Map<PluginKey, PluginInfo> content = new HashMap<>();
      for (PluginEvent e : byseq.values()) {
        switch (e.kind()) {
          case REGISTERED, UPDATED -> content.put(e.plugin().key(), e.plugin());
          case DEREGISTERED -> content.remove(e.plugin().key());
        }
      }
      replayed.put(t, content);
    }

    // Subscribers catch up; each view equals memory.
    Map<PluginType, Map<PluginKey, PluginInfo>> memory = new EnumMap<>(PluginType.class);
    for (PluginType t : PluginType.values()) {
      Map<PluginKey, PluginInfo> m = new HashMap<>();
      registry.listAll(t).forEach(p -> m.put(p.key(), p));
      memory.put(t, m);
      assertEquals(m, replayed.get(t), where + ": " + t + " memory vs the replay of every event handed back");
      long last = handedBack.get(t).size();
      await().atMost(Duration.ofSeconds(60)).until(() -> views.stream().filter(v -> v.type() == t)
          .allMatch(v -> v.lastSequence() == last));
    }
    long deliveries = 0;
    long lags = 0;
    for (RegistryView v : views) {
      assertEquals(memory.get(v.type()), v.content(), where + ": a " + v.type() + " subscriber's view");
      deliveries += v.eventCount();
      lags += v.lags();
    }
    assertEquals(List.of(), problems, where + ": subscribers saw contract violations");

    // The store, read back by a fresh registry, holds the same, and list() picks the same newest instance per name.
    Map<PluginType, List<PluginKey>> newest = new EnumMap<>(PluginType.class);
    for (PluginType t : PluginType.values()) {
      newest.put(t, registry.list(t).stream().map(PluginInfo::key).toList());
    }
    registry.close();
    views.forEach(RegistryView::close);
    StateStore reopened = store;
    if (store instanceof JournalStateStore) {
      store.close();
      reopened = reopen.get();
    }
    try (PluginRegistry restored = PluginRegistry.builder().stateStore(reopened).build()) {
      assertEquals(List.of(), restored.restoreProblems(), where);
      int records = 0;
      for (PluginType t : PluginType.values()) {
        Map<PluginKey, PluginInfo> m = new HashMap<>();
        restored.listAll(t).forEach(p -> m.put(p.key(), p.withRestored(false)));
        assertEquals(memory.get(t), m, where + ": " + t + " restored from the store vs memory");
        records += m.size();
        assertEquals(newest.get(t), restored.list(t).stream().map(PluginInfo::key).toList(),
            where + ": newest instance per name after restore");
      }
      assertEquals((long) records, reopened.loadAll().keySet().stream().filter(k -> k.startsWith(PluginKey.STORE_PREFIX)).count(),
          where + ": one record per registration");
    } finally {
      if (reopened instanceof JournalStateStore) {
        reopened.close();
      }
    }
    System.out.println("load: " + churned.get() + " short-lived subscriptions checked their own streams");
    return new Result((long) threads * opsPerThread, millis, events, deliveries, lags);
  }

  private static void read(PluginRegistry registry, PluginType type, String name, Random random) {
    registry.find(type, name).ifPresent(p -> assertEquals(name, p.name()));
    if (random.nextInt(4) != 0) {
      return; // list() and listAll() walk the whole registry under its lock: one read in four
    }
    List<PluginInfo> list = registry.list(type);
    List<String> names = list.stream().map(PluginInfo::name).toList();
    List<String> sorted = names.stream().sorted().distinct().toList();
    assertEquals(sorted, names, "list() must be sorted by name, one instance per name");
    list.forEach(p -> assertEquals(type, p.type()));
    List<PluginInfo> all = registry.listAll(type);
    assertEquals(all.size(), Set.copyOf(all.stream().map(PluginInfo::key).toList()).size(), "listAll repeats a key");
  }

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  static PluginInfo info(PluginType type, String name, String alloc, int version, boolean healthy) {
    return new PluginInfo(type, name, "1." + version, alloc, Path.of("/csi", type.id(), name, "csi.sock"),
        Map.of("provider", name + ".csi.dev"),
        new Fingerprint(name + ".csi.dev", "1." + version, Map.of(), Set.of("CONTROLLER_SERVICE"), Set.of(), Set.of(),
            "node-1", 0, Map.of()),
        healthy ? PluginHealth.healthy(T0) : PluginHealth.unhealthy("probe failed", T0), false);
  }

  private ExecutorService pool(int threads, String name) {
    AtomicLong n = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, name + "-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    pools.add(pool);
    return pool;
  }
}
