package dev.csisupervisor.state;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The node's group commit: batching, fairness, exactly-the-failed-batch, lanes, the commit thread, stop. */
class GroupCommitStoreTest {

  /** The plain store contract holds through the group commit, in front of the journal. */
  @Nested
  class OverTheJournal extends StateStoreContractTest {
    @TempDir Path tmp;

    @Override
    protected StateStore newStore() {
      return GroupCommitStore.over(JournalStateStore.open(tmp.resolve("data")));
    }

    @Override
    protected StateStore reopen(StateStore store) {
      store.close();
      return GroupCommitStore.over(JournalStateStore.open(tmp.resolve("data")));
    }
  }

  private final InMemoryStateStore memory = new InMemoryStateStore();
  private final GroupCommitStore store = GroupCommitStore.over(memory);
  /** The changes of every commit that reached the memory store, in order. */
  private final List<List<String>> commits = new CopyOnWriteArrayList<>();
  private final List<Thread> threads = new ArrayList<>();

  @AfterEach
  void tearDown() throws InterruptedException {
    memory.beforeCommit(changes -> { });
    store.close();
    for (Thread t : threads) {
      t.join(TimeUnit.SECONDS.toMillis(10));
      assertFalse(t.isAlive(), t + " still runs");
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(UTF_8);
  }

  private static StateChange put(String key) {
    return new StateChange.Put(key, bytes(key));
  }

  /** Records every commit's keys; the first commit blocks until {@code release} opens (when given). */
  private void recordCommits(CountDownLatch inFlight, CountDownLatch release) {
    memory.beforeCommit(changes -> {
      commits.add(changes.stream().map(StateChange::key).toList());
      if (release != null && commits.size() == 1) {
        inFlight.countDown();
        await(release);
      }
    });
  }

  private static void await(CountDownLatch latch) {
    try {
      assertTrue(latch.await(10, TimeUnit.SECONDS), "timed out");
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
  }

  private Thread start(String name, Runnable r) {
    Thread t = new Thread(r, name);
    threads.add(t);
    t.start();
    return t;
  }

  /** {@link #start}s {@code r}; what it throws is kept in {@code outcome} (nothing: it stays null). */
  private Thread startCatching(String name, Runnable r, AtomicReference<Throwable> outcome) {
    return start(name, () -> {
      try {
        r.run();
      } catch (Throwable t) {
        outcome.set(t);
      }
    });
  }

  /** Waits (bounded) until {@code n} entries are queued behind the commit in flight. */
  private void awaitQueued(int n) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (store.queued() < n) {
      assertTrue(System.nanoTime() < deadline, "only " + store.queued() + " of " + n + " queued");
      Thread.yield(); // real threads are the point here: wait for them to queue, not for time
    }
  }

  @Test
  void changesWaitingBehindACommit_allGoIntoTheNextOne_inArrivalOrder_fromEveryWayIn() throws Exception {
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    recordCommits(inFlight, release);
    start("first", () -> store.put("first", bytes("1")));
    await(inFlight);

    List<CompletableFuture<Void>> async = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      String key = "w" + i;
      start(key, () -> store.put(key, bytes(key)));
      awaitQueued(2 * i + 1);
      async.add(store.applyAsync(List.of(put("a" + i))));
    }
    CommitLane<String> lane = store.lane("test", requests -> prepared(
        requests.stream().map(GroupCommitStoreTest::put).toList(), new AtomicReference<>(), () -> { }));
    start("lane", () -> lane.submit("lane0"));
    awaitQueued(17);
    release.countDown();
    for (CompletableFuture<Void> f : async) {
      f.get(10, TimeUnit.SECONDS);
    }
    for (Thread t : threads) {
      t.join(10_000);
    }

    List<String> expected = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      expected.add("w" + i);
      expected.add("a" + i);
    }
    expected.add("lane0");
    assertEquals(List.of(List.of("first"), expected), commits, "one commit for everything that waited");
    assertEquals(2, store.commits());
    assertEquals(18, store.changes());
    assertArrayEquals(bytes("w7"), store.get("w7").orElseThrow());
  }

  /**
   * Notes the thread of every commit into {@code committers} (cleared first), starts a put of {@code name} and
   * returns once its commit is in flight, held until the returned latch opens.
   */
  private CountDownLatch holdTheFirstCommitOf(String name, List<String> committers) {
    committers.clear();
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    memory.beforeCommit(changes -> {
      committers.add(Thread.currentThread().getName());
      if (committers.size() == 1) {
        inFlight.countDown();
        await(release);
      }
    });
    start(name, () -> store.put(name, bytes(name)));
    await(inFlight);
    return release;
  }

  @Test
  void theCommitInFlight_handsTheTurnToTheFirstCallerWaiting_wakingEachCallerOnce_orToTheCommitThread()
      throws Exception {
    List<String> committers = new CopyOnWriteArrayList<>();
    CountDownLatch release = holdTheFirstCommitOf("first", committers);
    CompletableFuture<Void> async = store.applyAsync(List.of(put("a0")));
    for (int i = 0; i < 4; i++) {
      String key = "w" + i;
      start(key, () -> store.put(key, bytes(key)));
      awaitQueued(i + 2);
    }
    release.countDown();
    async.get(10, TimeUnit.SECONDS);
    for (Thread t : threads) {
      t.join(10_000);
    }
    assertEquals(List.of("first", "w0"), committers, "the first caller waiting commits the next batch");
    // Each waiting caller was woken once: w0 to commit, the others when their change was durable (waking every
    // waiter at each commit, to let them find out who is next, woke w1..w3 twice).
    assertEquals(4, store.wakeups());

    release = holdTheFirstCommitOf("second", committers);
    CompletableFuture<Void> alone = store.applyAsync(List.of(put("a1")));
    awaitQueued(1);
    release.countDown();
    alone.get(10, TimeUnit.SECONDS);
    assertEquals(List.of("second", "csi-state-commit"), committers, "no caller waits: the commit thread commits");
  }

  @Test
  void manyWriters_shareCommits_andEveryPutLands_onceAndInItsWritersOrder() throws Exception {
    // (Fairness itself, without thread scheduling in the way, is the test above: all that waits is in the next.)
    java.util.Map<String, List<Integer>> landed = new java.util.concurrent.ConcurrentHashMap<>();
    memory.beforeCommit(changes -> changes.forEach(c -> {
      String[] id = new String(((StateChange.Put) c).value(), UTF_8).split(":");
      landed.computeIfAbsent(id[0], w -> new CopyOnWriteArrayList<>()).add(Integer.parseInt(id[1]));
    }));
    CountDownLatch go = new CountDownLatch(1);
    for (int w = 0; w < 16; w++) {
      int writer = w;
      start("writer-" + w, () -> {
        await(go);
        for (int i = 0; i < 200; i++) {
          store.put("w" + writer, bytes(writer + ":" + i));
        }
      });
    }
    go.countDown();
    for (Thread t : threads) {
      t.join(60_000);
    }
    List<Integer> each = java.util.stream.IntStream.range(0, 200).boxed().toList();
    for (int w = 0; w < 16; w++) {
      assertEquals(each, landed.get(Integer.toString(w)), "writer " + w);
      assertArrayEquals(bytes(w + ":199"), store.get("w" + w).orElseThrow());
    }
    assertTrue(store.commits() < 16 * 200, "writers shared commits: " + store.commits());
    assertEquals(16 * 200, store.changes());
  }

  @Test
  void aFailedCommit_failsExactlyItsBatch_andTheNextIsTriedAfresh() throws Exception {
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    recordCommits(inFlight, release);
    AtomicReference<Throwable> firstOutcome = new AtomicReference<>();
    startCatching("first", () -> store.put("first", bytes("1")), firstOutcome);
    await(inFlight);
    CompletableFuture<Void> second = store.applyAsync(List.of(put("second")));
    AtomicReference<Throwable> thirdOutcome = new AtomicReference<>();
    startCatching("third", () -> store.put("third", bytes("3")), thirdOutcome);
    awaitQueued(2);
    memory.failNextCommits(1); // the first commit, in flight, takes it only once released: its hook ran already
    release.countDown();
    for (Thread t : threads) {
      t.join(10_000);
    }
    second.get(10, TimeUnit.SECONDS);
    assertTrue(firstOutcome.get() instanceof StateStoreException, String.valueOf(firstOutcome.get()));
    assertEquals(null, thirdOutcome.get());
    assertTrue(store.get("first").isEmpty(), "nothing of the failed batch changed");
    assertArrayEquals(bytes("second"), store.get("second").orElseThrow());
    assertArrayEquals(bytes("3"), store.get("third").orElseThrow());
    assertEquals(List.of(List.of("first"), List.of("second", "third")), commits);
  }

  @Test
  void anAsynchronousChange_completesOnTheCallbacksThread_orFailsWithTheStoresException() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    memory.beforeCommit(changes -> await(release));
    AtomicReference<String> thread = new AtomicReference<>();
    CompletableFuture<Void> done = store.applyAsync(List.of(put("a")))
        .thenRun(() -> thread.set(Thread.currentThread().getName()));
    release.countDown();
    done.get(10, TimeUnit.SECONDS);
    assertEquals(CommitCallbacks.THREAD, thread.get());

    memory.failNextCommits(1);
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> store.applyAsync(List.of(put("b"))).get(10, TimeUnit.SECONDS));
    assertTrue(e.getCause() instanceof StateStoreException, e.toString());
    assertTrue(store.get("b").isEmpty());
    assertTrue(store.applyAsync(List.of()).isDone(), "nothing to commit: done at once");
  }

  @Test
  void aStageAttachedToAnAsynchronousCommit_holdsNoCommitBack_andMayItselfCommitSynchronously() throws Exception {
    CountDownLatch stageCommitted = new CountDownLatch(1);
    CountDownLatch hold = new CountDownLatch(1);
    // "a" is committed only once the stage is attached: a stage attached to a future already complete would run on
    // the attaching (test) thread, not on the callbacks thread (seen: 1 run in ~100, the test thread then waited on
    // its own latch).
    CountDownLatch attached = new CountDownLatch(1);
    memory.beforeCommit(changes -> {
      if (changes.stream().anyMatch(c -> c.key().equals("a"))) {
        await(attached);
      }
    });
    CompletableFuture<Void> committed = store.applyAsync(List.of(put("a")));
    CompletableFuture<Void> stage = committed.thenRun(() -> {
      store.apply(List.of(put("from-stage"))); // on the callbacks thread: it commits, not waits on itself
      stageCommitted.countDown();
      await(hold); // a slow continuation (the volume manager's: a mount table read, a directory made)
    });
    attached.countDown();
    await(stageCommitted);
    // While the stage still runs: a synchronous and an asynchronous change commit, neither behind it (the
    // asynchronous one's future completes after the stage: futures complete in commit order).
    CountDownLatch cCommitting = new CountDownLatch(1);
    memory.beforeCommit(changes -> {
      if (changes.stream().anyMatch(c -> c.key().equals("c"))) {
        cCommitting.countDown();
      }
    });
    store.apply(List.of(put("b")));
    CompletableFuture<Void> c = store.applyAsync(List.of(put("c")));
    await(cCommitting);
    assertFalse(stage.isDone());
    hold.countDown();
    stage.get(10, TimeUnit.SECONDS);
    c.get(10, TimeUnit.SECONDS);
    for (String key : List.of("a", "from-stage", "b", "c")) {
      assertTrue(store.get(key).isPresent(), key);
    }
  }

  @Test
  void aSynchronousCommitInTheMiddleOfACommit_isRefused_onTheCommitThreadOrACallersThread() throws Exception {
    List<String> refusals = new CopyOnWriteArrayList<>();
    memory.beforeCommit(changes -> {
      if (changes.get(0).key().startsWith("inner")) {
        return;
      }
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> store.apply(List.of(put("inner-" + changes.get(0).key()))));
      refusals.add(Thread.currentThread().getName() + ": " + e.getMessage());
    });
    store.applyAsync(List.of(put("async"))).get(10, TimeUnit.SECONDS); // committed by the commit thread
    store.apply(List.of(put("sync"))); // committed by this thread
    assertEquals(2, refusals.size(), refusals.toString());
    assertTrue(refusals.get(0).startsWith("csi-state-commit: a synchronous commit from csi-state-commit, in the"
        + " middle of a commit, would wait on itself"), refusals.get(0));
    assertTrue(refusals.get(1).startsWith(Thread.currentThread().getName() + ": "), refusals.get(1));
    assertTrue(store.get("async").isPresent() && store.get("sync").isPresent(), "the outer commits landed");
    assertTrue(store.get("inner-async").isEmpty() && store.get("inner-sync").isEmpty(), "the refused did not");
    memory.beforeCommit(changes -> { });
    store.apply(List.of(put("after"))); // the refusals left no turn held
    assertTrue(store.get("after").isPresent());
  }

  @Test
  void aBadChange_isRefusedWhenSubmitted_namingIt_andQueuesNothing() {
    String longKey = "k".repeat(70_000);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> store.applyAsync(List.of(put("fine"), new StateChange.Delete(longKey))));
    assertTrue(e.getMessage().contains("over the limit of 65535"), e.getMessage());
    assertEquals("changes[1] must not be null",
        assertThrows(IllegalArgumentException.class, () -> store.apply(java.util.Arrays.asList(put("a"), null)))
            .getMessage());
    assertEquals("changes must not be null", assertThrows(IllegalArgumentException.class,
        () -> store.applyAsync(null)).getMessage());
    assertEquals(0, store.queued());
    assertTrue(store.get("fine").isEmpty());
    assertEquals(0, store.commits());
  }

  private static CommitLane.Prepared prepared(List<StateChange> changes, AtomicReference<Throwable> outcome,
      Runnable afterwards) {
    return new CommitLane.Prepared() {
      @Override
      public List<StateChange> changes() {
        return changes;
      }

      @Override
      public Runnable committed() {
        outcome.set(null);
        return afterwards;
      }

      @Override
      public void failed(Throwable failure) {
        outcome.set(failure);
      }
    };
  }

  @Test
  void aLane_isPreparedOnTheCommittingThread_toldBeforeTheNextBatch_andItsFollowUpRunsOnce() throws Exception {
    List<String> order = new CopyOnWriteArrayList<>();
    AtomicInteger followUps = new AtomicInteger();
    AtomicReference<Throwable> outcome = new AtomicReference<>(new Throwable("not told"));
    CommitLane<String> lane = store.lane("test", requests -> {
      order.add("prepare " + requests);
      return new CommitLane.Prepared() {
        @Override
        public List<StateChange> changes() {
          return requests.stream().map(GroupCommitStoreTest::put).toList();
        }

        @Override
        public Runnable committed() {
          order.add("committed " + requests);
          outcome.set(null);
          return followUps::incrementAndGet;
        }

        @Override
        public void failed(Throwable failure) {
          order.add("failed " + requests);
        }
      };
    });
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    memory.beforeCommit(changes -> {
      order.add("write " + changes.stream().map(StateChange::key).toList());
      if (changes.get(0).key().equals("block")) {
        inFlight.countDown();
        await(release);
      }
    });
    start("blocker", () -> store.put("block", bytes("b")));
    await(inFlight);
    start("x", () -> lane.submit("x"));
    awaitQueued(1);
    start("y", () -> lane.submit("y"));
    awaitQueued(2);
    release.countDown();
    for (Thread t : threads) {
      t.join(10_000);
    }
    lane.submit("z");
    assertEquals(List.of("write [block]", "prepare [x, y]", "write [x, y]", "committed [x, y]", "prepare [z]",
        "write [z]", "committed [z]"), order);
    assertEquals(2, followUps.get(), "once per batch, not once per caller");
    assertEquals(null, outcome.get());
  }

  @Test
  void aLaneWhosePrepareThrows_failsOnlyItsOwnCallers_andTheRestOfTheBatchCommits() throws Exception {
    IllegalStateException bug = new IllegalStateException("bug in prepare");
    CommitLane<String> broken = store.lane("broken", requests -> {
      throw bug;
    });
    CountDownLatch inFlight = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    recordCommits(inFlight, release);
    start("first", () -> store.put("first", bytes("1")));
    await(inFlight);
    AtomicReference<Throwable> thrown = new AtomicReference<>();
    startCatching("broken", () -> broken.submit("r"), thrown);
    awaitQueued(1);
    CompletableFuture<Void> other = store.applyAsync(List.of(put("other")));
    release.countDown();
    other.get(10, TimeUnit.SECONDS);
    for (Thread t : threads) {
      t.join(10_000);
    }
    assertSame(bug, thrown.get());
    assertEquals(List.of(List.of("first"), List.of("other")), commits);
  }

  @Test
  void stop_commitsWhatIsQueued_thenRefusesWrites_andLeavesTheStoreBelowOpen() throws Exception {
    CompletableFuture<Void> queued = store.applyAsync(List.of(put("a")));
    store.stop();
    assertTrue(queued.isDone());
    queued.get();
    assertArrayEquals(bytes("a"), memory.get("a").orElseThrow(), "the store below is still open");
    ExecutionException late = assertThrows(ExecutionException.class, () -> store.applyAsync(List.of(put("b"))).get());
    assertTrue(late.getCause() instanceof IllegalStateException, late.toString());
    assertThrows(IllegalStateException.class, () -> store.put("c", bytes("c")));
    AtomicReference<Throwable> told = new AtomicReference<>();
    CommitLane<String> lane = store.lane("late", requests -> prepared(List.of(put("d")), told, () -> { }));
    lane.submit("d");
    assertTrue(told.get() instanceof IllegalStateException, "a lane hears of it as a failed commit: " + told.get());
    assertTrue(memory.get("d").isEmpty());
    store.stop(); // idempotent
  }

  @Test
  void sharing_returnsTheNodesGroupCommit_orANewOneInFrontOfAPlainStore() {
    assertSame(store, GroupCommitStore.sharing(store));
    GroupCommitStore own = GroupCommitStore.sharing(memory);
    assertFalse(own == store);
    own.put("x", bytes("1"));
    own.stop();
    assertArrayEquals(bytes("1"), memory.get("x").orElseThrow());
    assertEquals("store is already a GroupCommitStore: " + store,
        assertThrows(IllegalArgumentException.class, () -> GroupCommitStore.over(store)).getMessage());
    assertEquals("store must not be null",
        assertThrows(IllegalArgumentException.class, () -> GroupCommitStore.over(null)).getMessage());
  }
}
