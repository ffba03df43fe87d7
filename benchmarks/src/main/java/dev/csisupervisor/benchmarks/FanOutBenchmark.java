package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.InMemoryStateStore;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
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
 * Benchmark 3: fan-out. {@code subscribers} listeners on one type, delivered on a shared pool of
 * {@code deliveryThreads}; one shot publishes {@code events} events (alternating REGISTERED and
 * DEREGISTERED of a rotating set of plugins, in-memory store so the disk is not what is measured)
 * and ends when every subscriber has received the last one. Deliveries/s =
 * {@code subscribers * events / shot time}.
 *
 * <p>The writer is flow-controlled: it never runs more than {@link #WINDOW} events ahead of the
 * slowest subscriber, so no subscriber reaches the registry's backlog bound (10 000) and is dropped
 * as lagged; the shot measures sustained delivery, not queue growth. After each shot every
 * subscriber is checked: all events, gapless, in order, not lagged — a violation fails the run.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class FanOutBenchmark {
  /** How far the writer may run ahead of the slowest subscriber (well under the backlog bound). */
  static final int WINDOW = 4_096;
  private static final int PLUGINS = 1_000;

  @Param({"1000"})
  public int subscribers;

  @Param({"100000"})
  public int events;

  @Param({"2"})
  public int deliveryThreads;

  private PluginRegistry registry;
  private ExecutorService pool;
  private CheckingListener[] listeners;
  private Subscription[] subscriptions;
  private PluginInfo[] plugins;

  @Setup(Level.Iteration)
  public void setUp() {
    registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    AtomicInteger n = new AtomicInteger();
    pool = Executors.newFixedThreadPool(deliveryThreads, r -> {
      Thread t = new Thread(r, "bench-delivery-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    listeners = new CheckingListener[subscribers];
    subscriptions = new Subscription[subscribers];
    for (int i = 0; i < subscribers; i++) {
      listeners[i] = new CheckingListener();
      subscriptions[i] = registry.subscribe(PluginType.CSI_NODE, listeners[i], pool);
    }
    plugins = new PluginInfo[PLUGINS];
    for (int i = 0; i < PLUGINS; i++) {
      plugins[i] = Fixtures.plugin("fan-" + i, "alloc-fan-" + i);
    }
  }

  @TearDown(Level.Iteration)
  public void checkAndTearDown() throws InterruptedException {
    try {
      for (int i = 0; i < subscribers; i++) {
        CheckingListener l = listeners[i];
        if (l.errors != 0 || l.lagged || l.last != events || !subscriptions[i].isActive()) {
          throw new IllegalStateException("subscriber " + i + ": last=" + l.last + " of " + events + ", errors="
              + l.errors + ", lagged=" + l.lagged + ", active=" + subscriptions[i].isActive());
        }
      }
    } finally {
      registry.close();
      pool.shutdown();
      pool.awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  /** Publishes {@code events} events and waits until every subscriber has them all. */
  @Benchmark
  public long broadcast() {
    for (int i = 0; i < events; i++) {
      PluginInfo p = plugins[(i / 2) % PLUGINS];
      if (i % 2 == 0) {
        registry.register(p);
      } else {
        registry.deregister(p.type(), p.name(), p.allocId());
      }
      long published = i + 1;
      if ((published & 255) == 0) {
        awaitSlowest(published - WINDOW);
      }
    }
    awaitSlowest(events);
    return listeners[0].last;
  }

  private void awaitSlowest(long sequence) {
    while (slowest() < sequence) {
      LockSupport.parkNanos(20_000);
    }
  }

  private long slowest() {
    long min = Long.MAX_VALUE;
    for (CheckingListener l : listeners) {
      min = Math.min(min, l.last);
    }
    return min;
  }

  /** Checks gapless, in-order delivery; its fields are written only on its subscription's (serial) calls. */
  static final class CheckingListener implements PluginListener {
    volatile long last;
    volatile long errors;
    volatile boolean lagged;

    @Override
    public void onEvent(PluginEvent event) {
      long expected = last + 1;
      if (event.sequence() != expected) {
        errors++;
      }
      last = event.sequence();
    }

    @Override
    public void onLagged(long lastDeliveredSequence) {
      lagged = true;
    }
  }
}
