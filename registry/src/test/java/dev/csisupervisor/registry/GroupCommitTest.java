package dev.csisupervisor.registry;

import org.awaitility.core.ConditionFactory;
import org.awaitility.Awaitility;
import static dev.csisupervisor.registry.PluginType.CSI_NODE;
import static dev.csisupervisor.registry.TestRegistrations.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStoreException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Group commit, with real threads: the first commit is held inside the store while other writers queue up;
 * the queued writers must then share ONE commit, in arrival order, each returning only after it.
 */
class GroupCommitTest {

  private RecordingStore store;
  private PluginRegistry registry;
  private final CountDownLatch firstCommitEntered = new CountDownLatch(1);
  private final CountDownLatch releaseFirstCommit = new CountDownLatch(1);
  private final List<Thread> writers = new ArrayList<>();
  private final ExecutorService pool = Executors.newCachedThreadPool();

  @BeforeEach
  void setUp() {
    store = new RecordingStore(new InMemoryStateStore());
    registry = PluginRegistry.builder().stateStore(store).build();
    store.beforeCommit(changes -> {
      if (firstCommitEntered.getCount() > 0) {
        firstCommitEntered.countDown();
        try {
          if (!releaseFirstCommit.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("test never released the first commit");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
  }

  /** Cleanup only, whatever a test left behind (a failed test must not hang the next one). */
  @AfterEach
  void tearDown() throws InterruptedException {
    releaseFirstCommit.countDown();
    registry.close();
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
  }

  /** The end of every test: the registry closes and no writer or commit thread is left running. */
  private void assertEveryThreadEnds() throws InterruptedException {
    registry.close();
    pool.shutdown();
    assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS), "the first commit's thread did not end");
    for (Thread t : writers) {
      t.join(TimeUnit.SECONDS.toMillis(10));
      assertFalse(t.isAlive(), t + " did not end");
    }
  }

  /** Starts a writer and waits until it is parked behind the commit lock, so queue order is known. */
  private <T> CompletableFuture<T> queueWriter(Supplier<T> op) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Thread t = new Thread(() -> {
      try {
        result.complete(op.get());
      } catch (Throwable e) {
        result.completeExceptionally(e);
      }
    });
    writers.add(t);
    t.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> t.getState() == Thread.State.WAITING || result.isDone());
    assertFalse(result.isDone(), "writer should be waiting for the commit in flight");
    return result;
  }

  private CompletableFuture<Optional<PluginEvent>> startFirstCommit() throws InterruptedException {
    CompletableFuture<Optional<PluginEvent>> first = CompletableFuture.supplyAsync(() -> registry.register(node("first", "a")), pool);
    assertTrue(firstCommitEntered.await(10, TimeUnit.SECONDS));
    return first;
  }

  @Test
  void waitingWriters_shareOneCommit_inArrivalOrder() throws Exception {
    RecordingListener l = new RecordingListener();
    l.start(registry.subscribe(CSI_NODE, l, Runnable::run));
    CompletableFuture<Optional<PluginEvent>> first = startFirstCommit();

    List<CompletableFuture<Optional<PluginEvent>>> queued = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      String name = "p" + i;
      queued.add(queueWriter(() -> registry.register(node(name, "a"))));
    }
    // Same batch: a no-op re-register of p0 and a deregister of p1 see the batch's earlier changes.
    CompletableFuture<Optional<PluginEvent>> sameAgain = queueWriter(() -> registry.register(node("p0", "a")));
    CompletableFuture<Optional<PluginEvent>> dereg = queueWriter(() -> registry.deregister(CSI_NODE, "p1", "a"));
    assertFalse(first.isDone());

    releaseFirstCommit.countDown();

    assertEquals(1, first.get(10, TimeUnit.SECONDS).orElseThrow().sequence());
    for (int i = 0; i < 8; i++) {
      assertEquals(i + 2, queued.get(i).get(10, TimeUnit.SECONDS).orElseThrow().sequence());
    }
    assertTrue(sameAgain.get(10, TimeUnit.SECONDS).isEmpty());
    assertEquals(10, dereg.get(10, TimeUnit.SECONDS).orElseThrow().sequence());

    List<List<StateChange>> commits = store.commits();
    assertEquals(2, commits.size(), "the eight queued writers share one commit");
    assertEquals(10, commits.get(1).size(), "nine changes and the type's event sequence");
    assertEquals(new StateChange.Delete("plugin/csi-node/p1/a"), commits.get(1).get(8));
    assertEquals(List.of(), l.problems());
    assertEquals(10, l.lastSequence());
    assertEquals(8, registry.listAll(CSI_NODE).size());
    assertEveryThreadEnds();
  }

  @Test
  void theNodesGroupCommit_sharesOneFsyncBetweenTheRegistryAndAnotherModule_eventsOnlyAfterIt() throws Exception {
    registry.close();
    GroupCommitStore node = GroupCommitStore.over(store);
    registry = PluginRegistry.builder().stateStore(node).build();
    RecordingListener l = new RecordingListener();
    l.start(registry.subscribe(CSI_NODE, l, Runnable::run));
    CompletableFuture<Optional<PluginEvent>> first = startFirstCommit();

    CompletableFuture<Void> volume = node.applyAsync(List.of(new StateChange.Put("volume/x", new byte[] {1})));
    CompletableFuture<Optional<PluginEvent>> second = queueWriter(() -> registry.register(node("second", "a")));
    CompletableFuture<Void> volume2 = node.applyAsync(List.of(new StateChange.Put("volume/y", new byte[] {2})));
    assertEquals(0, l.lastSequence(), "no event before its commit");
    releaseFirstCommit.countDown();
    assertEquals(1, first.get(10, TimeUnit.SECONDS).orElseThrow().sequence());
    assertEquals(2, second.get(10, TimeUnit.SECONDS).orElseThrow().sequence());
    volume.get(10, TimeUnit.SECONDS);
    volume2.get(10, TimeUnit.SECONDS);

    List<List<StateChange>> commits = store.commits();
    assertEquals(2, commits.size(), "the registry's change and both volume changes share the second commit");
    assertEquals(List.of("volume/x", "plugin/csi-node/second/a", "registry/sequence/csi-node", "volume/y"),
        commits.get(1).stream().map(StateChange::key).toList());
    assertEquals(2, l.lastSequence());
    assertEquals(List.of(), l.problems());
    assertEveryThreadEnds();
    node.close();
  }

  @Test
  void failedGroupCommit_failsEveryWriterOfTheBatch_andChangesNothing() throws Exception {
    CompletableFuture<Optional<PluginEvent>> first = startFirstCommit();
    List<CompletableFuture<Optional<PluginEvent>>> queued = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      String name = "p" + i;
      queued.add(queueWriter(() -> registry.register(node(name, "a"))));
    }
    // The first commit succeeds; the group commit after it fails.
    store.beforeCommit(changes -> {
      if (changes.size() == 1 && changes.get(0).key().contains("first")) {
        try {
          releaseFirstCommit.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      } else {
        throw new StateStoreException("disk full");
      }
    });
    releaseFirstCommit.countDown();

    assertTrue(first.get(10, TimeUnit.SECONDS).isPresent());
    for (CompletableFuture<Optional<PluginEvent>> f : queued) {
      Throwable cause = assertThrowsCause(f);
      assertInstanceOf(StateStoreException.class, cause);
    }
    assertEquals(List.of(node("first", "a")), registry.listAll(CSI_NODE));
    store.beforeCommit(c -> {});
    assertEquals(2, registry.register(node("later", "a")).orElseThrow().sequence(), "no sequence gap after a failed batch");
    assertEveryThreadEnds();
  }

  private static Throwable assertThrowsCause(CompletableFuture<?> f) throws InterruptedException {
    try {
      f.get(10, TimeUnit.SECONDS);
      throw new AssertionError("expected failure");
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause();
    } catch (java.util.concurrent.TimeoutException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void close_failsQueuedWriters_afterLettingTheCommitInFlightFinish() throws Exception {
    CompletableFuture<Optional<PluginEvent>> first = startFirstCommit();
    CompletableFuture<Optional<PluginEvent>> queued = queueWriter(() -> registry.register(node("queued", "a")));
    Thread closer = new Thread(registry::close);
    closer.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> closer.getState() == Thread.State.WAITING);
    releaseFirstCommit.countDown();
    closer.join(10_000);
    assertFalse(closer.isAlive());
    assertTrue(first.get(10, TimeUnit.SECONDS).isPresent(), "the commit in flight completes normally");
    Throwable cause = assertThrowsCause(queued);
    assertInstanceOf(IllegalStateException.class, cause);
    assertTrue(cause.getMessage().contains("closed"));
    assertEquals(List.of(node("first", "a")), registry.listAll(CSI_NODE));
    assertEveryThreadEnds();
  }

  @Test
  void close_waitsForListenerCallInFlight_andNothingIsDeliveredAfterItReturns() throws Exception {
    store.beforeCommit(c -> {});
    ExecutorService listenerThread = Executors.newSingleThreadExecutor();
    CountDownLatch inListener = new CountDownLatch(1);
    CountDownLatch letListenerFinish = new CountDownLatch(1);
    RecordingListener l = new RecordingListener() {
      @Override
      void onEventHook(PluginEvent e) {
        if (e.sequence() == 1) {
          inListener.countDown();
          try {
            letListenerFinish.await(30, TimeUnit.SECONDS);
          } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
          }
        }
      }
    };
    l.start(registry.subscribe(CSI_NODE, l, listenerThread));
    registry.register(node("a", "1"));
    registry.register(node("b", "1")); // queued behind the blocked call
    assertTrue(inListener.await(10, TimeUnit.SECONDS));

    Thread closer = new Thread(registry::close);
    closer.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> closer.getState() == Thread.State.TIMED_WAITING);
    assertTrue(closer.isAlive(), "close must wait for the listener call in flight");
    letListenerFinish.countDown();
    closer.join(10_000);
    assertFalse(closer.isAlive());
    listenerThread.shutdown();
    assertTrue(listenerThread.awaitTermination(10, TimeUnit.SECONDS));
    assertEquals(1, l.events().size(), "event #2 was queued but must not be delivered after close");
    assertEquals(1, l.closedCalls());
    assertEquals(List.of(), l.problems());
    assertEveryThreadEnds();
  }

  /** Awaitility polling from the first moment and every 10 ms (by default it waits 100 ms before it first looks). */
  private static ConditionFactory await() {
    return Awaitility.await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10));
  }
}
