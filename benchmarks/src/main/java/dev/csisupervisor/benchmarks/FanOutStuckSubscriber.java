package dev.csisupervisor.benchmarks;

import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import dev.csisupervisor.state.InMemoryStateStore;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Benchmark 3, second part: does one subscriber that never returns hurt writers? A writer issues
 * register/deregister at a fixed rate (open loop, {@link #RATE}/s) to a registry with 1 000 healthy
 * subscribers (shared 2-thread delivery pool), once without and once with one extra subscriber whose
 * {@code onEvent} blocks forever on its own thread. The latency of every register/deregister call is
 * recorded. The stuck subscriber must be dropped once its backlog passes the bound (set to
 * {@link #BACKLOG} here so that happens within seconds) and, once its thread is released, receive
 * {@code onLagged}. In-memory store, so the registry's own cost is what is measured.
 */
final class FanOutStuckSubscriber {
  private static final int SUBSCRIBERS = 1_000;
  private static final int RATE = 1_000;
  private static final int BACKLOG = 2_000;

  private FanOutStuckSubscriber() {}

  public static void main(String[] args) throws Exception {
    boolean quick = Main.isQuick(args);
    int seconds = quick ? 8 : 30;
    System.out.println(Env.describe());
    System.out.printf("fanout-stuck (%s): %d subscribers, %d changes/s for %d s, backlog bound %d%n",
        quick ? "quick" : "full", SUBSCRIBERS, RATE, seconds, BACKLOG);
    run(false, 3); // warm-up
    Stats baseline = run(false, seconds);
    Stats stuck = run(true, seconds);
    System.out.printf(Locale.ROOT, "RESULT fanout-stuck | without stuck subscriber: register %s | with one: %s"
            + " | p99 ratio %.2f (target <= 2) | load %s%n",
        baseline.describeMicros(), stuck.describeMicros(), (double) stuck.p99() / baseline.p99(), Env.loadAverage());
  }

  private static Stats run(boolean withStuck, int seconds) throws Exception {
    PluginRegistry registry = PluginRegistry.builder()
        .stateStore(new InMemoryStateStore())
        .maxSubscriberBacklog(BACKLOG)
        .closeTimeout(java.time.Duration.ofMillis(100))
        .build();
    ExecutorService pool = Executors.newFixedThreadPool(2, TimeToRegister.daemonThreads("bench-delivery"));
    ExecutorService stuckThread = Executors.newSingleThreadExecutor(TimeToRegister.daemonThreads("bench-stuck"));
    FanOutBenchmark.CheckingListener[] listeners = new FanOutBenchmark.CheckingListener[SUBSCRIBERS];
    for (int i = 0; i < SUBSCRIBERS; i++) {
      listeners[i] = new FanOutBenchmark.CheckingListener();
      registry.subscribe(PluginType.CSI_NODE, listeners[i], pool);
    }
    CountDownLatch release = new CountDownLatch(1);
    CompletableFuture<Long> lagged = new CompletableFuture<>();
    Subscription stuckSub = null;
    if (withStuck) {
      stuckSub = registry.subscribe(PluginType.CSI_NODE, new PluginListener() {
        @Override
        public void onEvent(PluginEvent event) {
          try {
            release.await(); // "never returns" until the run is over
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }

        @Override
        public void onLagged(long lastDeliveredSequence) {
          lagged.complete(lastDeliveredSequence);
        }
      }, stuckThread);
    }
    PluginInfo[] plugins = new PluginInfo[100];
    for (int i = 0; i < plugins.length; i++) {
      plugins[i] = Fixtures.plugin("stuck-" + i, "alloc-stuck-" + i);
    }
    int events = RATE * seconds;
    long[] latency = new long[events];
    long period = TimeUnit.SECONDS.toNanos(1) / RATE;
    long start = System.nanoTime();
    long laggedAt = -1;
    for (int i = 0; i < events; i++) {
      long due = start + i * period;
      long wait = due - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      PluginInfo p = plugins[(i / 2) % plugins.length];
      long t = System.nanoTime();
      if (i % 2 == 0) {
        registry.register(p);
      } else {
        registry.deregister(p.type(), p.name(), p.allocId());
      }
      latency[i] = System.nanoTime() - t;
      if (stuckSub != null && laggedAt < 0 && !stuckSub.isActive()) {
        laggedAt = i + 1;
      }
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    for (FanOutBenchmark.CheckingListener l : listeners) {
      while (l.last < events && System.nanoTime() < deadline) {
        LockSupport.parkNanos(100_000);
      }
      if (l.last != events || l.errors != 0 || l.lagged) {
        throw new IllegalStateException("healthy subscriber: last=" + l.last + " of " + events + ", errors=" + l.errors
            + ", lagged=" + l.lagged);
      }
    }
    if (withStuck) {
      if (stuckSub.isActive()) {
        throw new IllegalStateException("the stuck subscriber was never dropped");
      }
      release.countDown();
      long last = lagged.get(10, TimeUnit.SECONDS);
      System.out.printf("stuck subscriber: dropped as lagged after event #%d (bound %d); onLagged(lastDelivered=%d)"
          + " received after its thread was released; %d healthy subscribers got all %d events, gapless, in order%n",
          laggedAt, BACKLOG, last, SUBSCRIBERS, events);
    } else {
      System.out.printf("%d subscribers got all %d events, gapless, in order%n", SUBSCRIBERS, events);
    }
    registry.close();
    pool.shutdown();
    stuckThread.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    Stats s = new Stats(latency);
    System.out.println((withStuck ? "with stuck subscriber: " : "baseline: ") + "register/deregister " + s.describeMicros());
    return s;
  }
}
