package dev.csisupervisor.supervisor;

import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook.Phase;
import dev.csisupervisor.supervisor.FakeConnection.Probe;
import dev.csisupervisor.testing.FakeScheduler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Contract 6: no durable commit on the scheduler or under a hook's lock. The state store can be
 * held shut (a disk that stalls); the fake scheduler runs on the test's thread, so a commit made
 * on it would hang the test (caught by a preemptive timeout) instead of passing.
 */
class CommitsOffSchedulerTest {
  private static final int PLUGINS = 200;
  private static final Duration PATIENCE = Duration.ofSeconds(20);

  @TempDir Path root;

  /** A store whose writes wait while the gate is shut. */
  private static final class GatedStore implements StateStore {
    private final InMemoryStateStore delegate = new InMemoryStateStore();
    private volatile CountDownLatch gate = new CountDownLatch(0);
    final AtomicInteger waiting = new AtomicInteger();

    void shut() {
      gate = new CountDownLatch(1);
    }

    void open() {
      gate.countDown();
    }

    private void pass() {
      waiting.incrementAndGet();
      try {
        gate.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted at the gate", e);
      } finally {
        waiting.decrementAndGet();
      }
    }

    @Override public void put(String key, byte[] value) { pass(); delegate.put(key, value); }
    @Override public void delete(String key) { pass(); delegate.delete(key); }
    @Override public Optional<byte[]> get(String key) { return delegate.get(key); }
    @Override public Map<String, byte[]> loadAll() { return delegate.loadAll(); }
    @Override public void apply(List<StateChange> changes) { pass(); delegate.apply(changes); }
    @Override public void close() { open(); delegate.close(); }
  }

  private final FakeScheduler scheduler = new FakeScheduler();
  private final GatedStore store = new GatedStore();
  private final ExecutorService commits = Executors.newFixedThreadPool(4, r -> {
    Thread t = new Thread(r, "commit-pool");
    t.setDaemon(true);
    return t;
  });
  private final Map<Path, FakeConnection> plugins = new ConcurrentHashMap<>();
  /** Threads that called register/deregister on the registry. */
  private final Set<String> writers = ConcurrentHashMap.newKeySet();
  private PluginRegistry real;
  private CsiPluginSupervisor supervisor;

  private PluginRegistry recording(PluginRegistry delegate) {
    return (PluginRegistry) Proxy.newProxyInstance(PluginRegistry.class.getClassLoader(),
        new Class<?>[] {PluginRegistry.class}, (proxy, method, args) -> {
          if (method.getName().equals("register") || method.getName().equals("deregister")) {
            writers.add(Thread.currentThread().getName());
          }
          try {
            return method.invoke(delegate, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  private List<CsiPluginSupervisorHook> startAll() throws Exception {
    real = PluginRegistry.builder().stateStore(store).clock(scheduler.clock()).build();
    supervisor = CsiPluginSupervisor.builder().csiRoot(root).registry(recording(real))
        .scheduler(scheduler).registryExecutor(commits).clock(scheduler.clock())
        .random(new Random(11))
        .connector((socket, probeTimeout, fingerprintTimeout) -> plugins.computeIfAbsent(socket,
            s -> {
              FakeConnection c = new FakeConnection(scheduler, probeTimeout);
              c.probe = Probe.READY;
              return c;
            }))
        .build();
    List<CsiPluginSupervisorHook> hooks = new ArrayList<>();
    for (int i = 0; i < PLUGINS; i++) {
      CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext("alloc-" + i, "plugin"),
          CsiPluginConfig.builder("p" + i, PluginKind.NODE).probeInterval(Duration.ofSeconds(10))
              .healthTimeout(Duration.ZERO).build(),
          TaskEventEmitter.discarding(), reason -> { });
      hook.prestart(PrestartRequest.withEnv(Map.of()));
      hook.poststart(PoststartRequest.of());
      hooks.add(hook);
    }
    await().atMost(PATIENCE).until(() -> {
      scheduler.runDueTasks();
      return hooks.stream().allMatch(h -> h.phase() == Phase.REGISTERED);
    });
    assertEquals(PLUGINS, real.list(PluginType.CSI_NODE).size());
    return hooks;
  }

  @AfterEach
  void tearDown() {
    store.open();
    if (supervisor != null) {
      supervisor.close();
    }
    if (real != null) {
      real.close();
    }
    commits.shutdownNow();
  }

  @Test
  void healthFlipOf200Plugins_doesNotDelayProbesOfTheOthers_andCommitsOffTheScheduler()
      throws Exception {
    List<CsiPluginSupervisorHook> hooks = startAll();
    String schedulerThread = Thread.currentThread().getName();
    store.shut(); // the disk stalls
    List<Integer> before = new ArrayList<>();
    for (int i = 0; i < PLUGINS; i++) {
      FakeConnection c = plugins.get(hooks.get(i).socketPath());
      before.add(c.probes);
      if (i % 2 == 0) {
        c.probe = Probe.NOT_READY; // half the node flips to unhealthy at once
      }
    }
    // Two steady ticks while every health UPDATE is stuck at the store: the scheduler must not be.
    assertTimeoutPreemptively(PATIENCE, () -> scheduler.forwardTime(20, TimeUnit.SECONDS),
        "the scheduler waited on a durable commit");
    for (int i = 0; i < PLUGINS; i++) {
      FakeConnection c = plugins.get(hooks.get(i).socketPath());
      assertEquals(before.get(i) + 2, c.probes, "plugin p" + i + " probed on time");
      assertEquals(i % 2 != 0, hooks.get(i).healthy(), "p" + i);
    }
    await().atMost(PATIENCE).until(() -> store.waiting.get() > 0);
    assertTrue(real.list(PluginType.CSI_NODE).stream().allMatch(p -> p.health().healthy()),
        "nothing committed while the store is shut");

    store.open();
    await().atMost(PATIENCE).until(() -> real.list(PluginType.CSI_NODE).stream()
        .filter(p -> !p.health().healthy()).count() == PLUGINS / 2);
    assertFalse(writers.contains(schedulerThread), "commits on the scheduler: " + writers);
    assertEquals(Set.of("commit-pool"), writers);
  }

  @Test
  void stop_waitsForItsDeregistration_withoutHoldingTheHookLock() throws Exception {
    List<CsiPluginSupervisorHook> hooks = startAll();
    CsiPluginSupervisorHook hook = hooks.get(0);
    store.shut();
    CompletableFuture<Void> stopped = CompletableFuture.runAsync(
        () -> hook.stop(StopRequest.because("task exited")));
    await().atMost(PATIENCE).until(() -> store.waiting.get() == 1);
    // The hook answers while its deregistration waits on the disk, and so does the scheduler.
    assertEquals(Phase.STOPPED, assertTimeoutPreemptively(Duration.ofSeconds(5), hook::phase));
    assertTimeoutPreemptively(PATIENCE, () -> scheduler.forwardTime(10, TimeUnit.SECONDS));
    assertFalse(stopped.isDone(), "stop() returns only once the deregistration is durable");
    assertTrue(real.find(PluginType.CSI_NODE, "p0").isPresent());

    store.open();
    stopped.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
    assertTrue(real.find(PluginType.CSI_NODE, "p0").isEmpty(), "durable when stop() returned");
  }

  /** Awaitility polling from the first moment and every 10 ms (by default it waits 100 ms before it first looks). */
  private static ConditionFactory await() {
    return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
  }
}
