package dev.csisupervisor.registry;

import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateStore;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Many threads register, update and deregister on an overlapping key space while subscribers come and go.
 * Afterwards memory, the state store (and, for MapDB, a reopened file) and every live subscriber's
 * reconstructed view agree, every subscriber saw a gapless sequence, and every sequence number was handed to
 * exactly one writer.
 */
class RegistryConcurrencyTest {

  private static final int WRITERS = 8;
  private static final int OPS_PER_WRITER = 500;
  private static final int SUBSCRIPTIONS = 24;

  @TempDir Path dataDir;

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"memory", "mapdb"})
  void concurrentWritersAndSubscribers_allViewsAgree(String storeKind) throws Exception {
    StateStore store = storeKind.equals("mapdb") ? JournalStateStore.open(dataDir) : new InMemoryStateStore();
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).maxSubscriberBacklog(1_000_000).build();
    ExecutorService listenerPool = Executors.newFixedThreadPool(3);
    ExecutorService writerPool = Executors.newFixedThreadPool(WRITERS + 1);
    AtomicInteger opsDone = new AtomicInteger();
    Map<PluginType, List<Long>> handedOut = new HashMap<>();
    for (PluginType t : PluginType.values()) {
      handedOut.put(t, Collections.synchronizedList(new ArrayList<>()));
    }
    List<RecordingListener> listeners = Collections.synchronizedList(new ArrayList<>());
    Map<RecordingListener, PluginType> listenerTypes = Collections.synchronizedMap(new HashMap<>());
    Map<RecordingListener, Subscription> subscriptions = Collections.synchronizedMap(new HashMap<>());
    CyclicBarrier start = new CyclicBarrier(WRITERS + 1);

    List<java.util.concurrent.Future<?>> futures = new ArrayList<>();
    for (int w = 0; w < WRITERS; w++) {
      int seed = w;
      futures.add(writerPool.submit(() -> {
        Random random = new Random(seed);
        start.await();
        for (int i = 0; i < OPS_PER_WRITER; i++) {
          PluginType type = PluginType.values()[random.nextInt(2)];
          String name = "n" + random.nextInt(4);
          String alloc = "a" + random.nextInt(5);
          if (random.nextInt(100) < 60) {
            PluginInfo info = TestRegistrations.info(type, name, alloc).withVersion("v" + random.nextInt(3))
                .withHealth(random.nextBoolean() ? PluginHealth.healthy(Instant.EPOCH)
                    : PluginHealth.unhealthy("down", Instant.EPOCH.plusSeconds(random.nextInt(5))));
            registry.register(info).ifPresent(e -> handedOut.get(e.type()).add(e.sequence()));
          } else {
            registry.deregister(type, name, alloc).ifPresent(e -> handedOut.get(e.type()).add(e.sequence()));
          }
          opsDone.incrementAndGet();
        }
        return null;
      }));
    }
    // Subscribers join while the writers run, spread over the run; every third one closes again.
    futures.add(writerPool.submit(() -> {
      start.await();
      int total = WRITERS * OPS_PER_WRITER;
      for (int s = 0; s < SUBSCRIPTIONS; s++) {
        while (opsDone.get() < (long) total * s / SUBSCRIPTIONS) {
          Thread.onSpinWait();
        }
        PluginType type = PluginType.values()[s % 2];
        RecordingListener l = new RecordingListener();
        synchronized (l) {
          Subscription sub = registry.subscribe(type, l, listenerPool);
          l.start(sub);
          subscriptions.put(l, sub);
        }
        if (s % 3 == 2) {
          subscriptions.get(l).close();
        } else {
          listeners.add(l);
          listenerTypes.put(l, type);
        }
      }
      return null;
    }));
    for (java.util.concurrent.Future<?> f : futures) {
      f.get(120, TimeUnit.SECONDS);
    }

    Map<PluginType, Long> lastSequence = new HashMap<>();
    for (PluginType t : PluginType.values()) {
      long last = registry.subscribe(t, new RecordingListener(), Runnable::run).snapshotSequence();
      lastSequence.put(t, last);
      List<Long> seqs = new ArrayList<>(handedOut.get(t));
      Collections.sort(seqs);
      List<Long> expected = new ArrayList<>();
      for (long i = 1; i <= last; i++) {
        expected.add(i);
      }
      assertEquals(expected, seqs, t + ": every sequence number handed to exactly one writer");
    }

    for (RecordingListener l : listeners) {
      PluginType t = listenerTypes.get(l);
      await().atMost(Duration.ofSeconds(60)).until(() -> l.lastSequence() == lastSequence.get(t));
      assertEquals(List.of(), l.problems());
      assertEquals(byKey(registry.listAll(t)), l.view(), t + " subscriber view");
      assertTrue(subscriptions.get(l).isActive());
    }

    Map<PluginKey, PluginInfo> memory = new HashMap<>();
    for (PluginType t : PluginType.values()) {
      memory.putAll(byKey(registry.listAll(t)));
    }
    assertEquals(memory, decodeAll(store));
    assertTrue(memory.size() > 5, "the run should leave some registrations: " + memory.size());

    registry.close();
    listenerPool.shutdown();
    writerPool.shutdown();
    assertTrue(listenerPool.awaitTermination(10, TimeUnit.SECONDS));
    for (RecordingListener l : listeners) {
      assertEquals(1, l.closedCalls());
    }
    if (store instanceof JournalStateStore) {
      store.close();
      store = JournalStateStore.open(dataDir, JournalStateStore.Options.defaults().withStrict(true));
      PluginRegistry reopened = PluginRegistry.builder().stateStore(store).build();
      Map<PluginKey, PluginInfo> restored = new HashMap<>();
      for (PluginType t : PluginType.values()) {
        reopened.listAll(t).forEach(p -> restored.put(p.key(), p.withRestored(false)));
      }
      assertEquals(memory, restored);
      reopened.close();
    }
    store.close();
    System.out.printf("%s: %d ops, %d events, final %d registrations%n", storeKind, WRITERS * OPS_PER_WRITER,
        lastSequence.values().stream().mapToLong(Long::longValue).sum(), memory.size());
  }

  static Map<PluginKey, PluginInfo> byKey(List<PluginInfo> infos) {
    return infos.stream().collect(Collectors.toMap(PluginInfo::key, Function.identity()));
  }

  static Map<PluginKey, PluginInfo> decodeAll(StateStore store) throws PluginRecordCodec.RecordFormatException {
    Map<PluginKey, PluginInfo> result = new HashMap<>();
    for (Map.Entry<String, byte[]> e : store.loadAll().entrySet()) {
      if (!e.getKey().startsWith(PluginKey.STORE_PREFIX)) {
        continue;
      }
      PluginInfo info = PluginRecordCodec.decode(e.getKey(), e.getValue()).info();
      result.put(info.key(), info);
    }
    return result;
  }

  /** Awaitility polling from the first moment and every 10 ms (by default it waits 100 ms before it first looks). */
  private static ConditionFactory await() {
    return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
  }
}
