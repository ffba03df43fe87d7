package dev.csisupervisor.registry;

import dev.csisupervisor.testing.FakeScheduler;
import static dev.csisupervisor.registry.PluginType.CSI_CONTROLLER;
import static dev.csisupervisor.registry.PluginType.CSI_NODE;
import static dev.csisupervisor.registry.TestRegistrations.T0;
import static dev.csisupervisor.registry.TestRegistrations.controller;
import static dev.csisupervisor.registry.TestRegistrations.node;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.registry.PluginEvent.Kind;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every registry rule, run once with the in-memory store and once with a MapDB file (subclasses). Listeners
 * run on a direct executor unless the test is about slow subscribers, so everything is deterministic.
 */
abstract class PluginRegistryContractTest {

  static final Executor DIRECT = Runnable::run;

  protected RecordingStore store;
  protected MutableClock clock;
  protected PluginRegistry registry;

  /** A new empty store. */
  protected abstract StateStore openStore() throws Exception;

  /** Closes {@code store} and opens the same storage again (the in-memory store: the same instance). */
  protected abstract StateStore reopenStore(StateStore store) throws Exception;

  @BeforeEach
  void setUp() throws Exception {
    clock = new MutableClock(T0.plusSeconds(100));
    store = new RecordingStore(openStore());
    registry = builder().build();
  }

  @AfterEach
  void tearDown() {
    registry.close();
    store.close();
  }

  PluginRegistry.Builder builder() {
    return PluginRegistry.builder().stateStore(store).clock(clock)
        .dispenser(CSI_NODE, p -> "client:" + p.key())
        .dispenser(CSI_CONTROLLER, p -> "controller:" + p.key());
  }

  /** Closes registry and store, reopens the store, builds a new registry from it. */
  PluginRegistry restart() throws Exception {
    return restart(builder());
  }

  PluginRegistry restart(PluginRegistry.Builder b) throws Exception {
    registry.close();
    store = new RecordingStore(reopenStore(store.wrapped()));
    registry = b.stateStore(store).build();
    return registry;
  }

  RecordingListener subscribe(PluginType type) {
    return subscribe(type, DIRECT);
  }

  /** A started listener; it holds its own lock while subscribing, so no event overtakes its snapshot. */
  RecordingListener subscribe(PluginType type, Executor executor) {
    RecordingListener l = new RecordingListener();
    synchronized (l) {
      l.start(registry.subscribe(type, l, executor));
    }
    return l;
  }

  /** Registers {@code p}, then subscribes to its type: a subscriber whose snapshot already holds {@code p}. */
  RecordingListener subscribeAfterRegistering(PluginInfo p) {
    registry.register(p);
    return subscribe(p.type());
  }

  /** {@code e} is the given change and the only event {@code l} has received. */
  private static void assertOnlyEvent(RecordingListener l, PluginEvent e, Kind kind, long sequence, PluginInfo plugin) {
    assertEquals(kind, e.kind());
    assertEquals(sequence, e.sequence());
    assertEquals(plugin, e.plugin());
    assertEquals(List.of(e), l.events());
  }

  /** {@code call} returns no event, commits nothing and delivers nothing to {@code l}. */
  private void assertNoOp(RecordingListener l, Supplier<Optional<PluginEvent>> call) {
    int commits = store.commits().size();
    int events = l.events().size();
    assertTrue(call.get().isEmpty(), "no event");
    assertEquals(commits, store.commits().size(), "no commit");
    assertEquals(events, l.events().size(), "nothing delivered");
  }

  Map<String, PluginInfo> storedRecords() {
    Map<String, PluginInfo> result = new java.util.TreeMap<>();
    store.loadAll().forEach((k, v) -> {
      if (!k.startsWith(PluginKey.STORE_PREFIX)) {
        return; // the registry's own bookkeeping (event sequence numbers)
      }
      try {
        result.put(k, PluginRecordCodec.decode(k, v).info());
      } catch (PluginRecordCodec.RecordFormatException e) {
        throw new AssertionError(k, e);
      }
    });
    return result;
  }

  // ---- register / update / deregister ----

  @Test
  void registerNew_emitsRegistered_persistsAndLists() {
    RecordingListener l = subscribe(CSI_NODE);
    PluginEvent e = registry.register(node("ebs", "a1")).orElseThrow();
    assertOnlyEvent(l, e, Kind.REGISTERED, 1, node("ebs", "a1"));
    assertEquals(CSI_NODE, e.type());
    assertEquals(clock.instant(), e.time());
    assertEquals(List.of(node("ebs", "a1")), registry.list(CSI_NODE));
    assertEquals(List.of(), registry.list(CSI_CONTROLLER));
    assertEquals(Map.of("plugin/csi-node/ebs/a1", node("ebs", "a1")), storedRecords());
  }

  @Test
  void reRegisterSameContent_isNoOp_withoutEventOrCommit() {
    RecordingListener l = subscribeAfterRegistering(node("ebs", "a1"));
    assertNoOp(l, () -> registry.register(node("ebs", "a1")));
    // A later probe reporting the same health at a later time is the same content too.
    PluginInfo later = node("ebs", "a1").withHealth(PluginHealth.healthy(T0.plusSeconds(60)));
    assertNoOp(l, () -> registry.register(later));
    assertEquals(List.of(), l.events());
    assertEquals(T0, registry.find(CSI_NODE, "ebs").orElseThrow().health().since());
  }

  @Test
  void reRegisterWithNewVersion_emitsUpdated() {
    RecordingListener l = subscribeAfterRegistering(node("ebs", "a1"));
    PluginInfo v2 = node("ebs", "a1").withVersion("2.0.0");
    PluginEvent e = registry.register(v2).orElseThrow();
    assertOnlyEvent(l, e, Kind.UPDATED, 2, v2);
    assertEquals(List.of(v2), registry.list(CSI_NODE));
    assertEquals(v2, storedRecords().get("plugin/csi-node/ebs/a1"));
  }

  @Test
  void changeOfAnyField_emitsOneUpdatedEach() {
    PluginInfo base = node("ebs", "a1");
    registry.register(base);
    List<PluginInfo> changes = List.of(
        base.withSocketPath(Path.of("/other.sock")),
        base.withSocketPath(Path.of("/other.sock")).withOptions(Map.of("mode", "prod")),
        base.withSocketPath(Path.of("/other.sock")).withOptions(Map.of("mode", "prod")).withFingerprint(Fingerprint.EMPTY),
        base.withSocketPath(Path.of("/other.sock")).withOptions(Map.of("mode", "prod")).withFingerprint(Fingerprint.EMPTY)
            .withHealth(PluginHealth.unhealthy("probe failed", T0.plusSeconds(5))),
        base.withSocketPath(Path.of("/other.sock")).withOptions(Map.of("mode", "prod")).withFingerprint(Fingerprint.EMPTY)
            .withHealth(PluginHealth.unhealthy("probe timed out", T0.plusSeconds(6))));
    long seq = 1;
    for (PluginInfo change : changes) {
      PluginEvent e = registry.register(change).orElseThrow(() -> new AssertionError("no event for " + change));
      assertEquals(Kind.UPDATED, e.kind());
      assertEquals(++seq, e.sequence());
      assertEquals(change, registry.find(CSI_NODE, "ebs").orElseThrow());
    }
  }

  @Test
  void updateWithUnchangedHealthState_keepsOriginalHealthSince() {
    registry.register(node("ebs", "a1"));
    PluginInfo v2 = node("ebs", "a1").withVersion("2").withHealth(PluginHealth.healthy(T0.plusSeconds(99)));
    PluginEvent e = registry.register(v2).orElseThrow();
    assertEquals(T0, e.plugin().health().since());
    assertEquals(T0, registry.find(CSI_NODE, "ebs").orElseThrow().health().since());
  }

  @Test
  void registerIgnoresRestoredFlagOfArgument() {
    PluginEvent e = registry.register(node("ebs", "a1").withRestored(true)).orElseThrow();
    assertFalse(e.plugin().restored());
    assertFalse(registry.find(CSI_NODE, "ebs").orElseThrow().restored());
  }

  @Test
  void deregisterKnown_emitsDeregistered_andRemovesRecord() {
    RecordingListener l = subscribeAfterRegistering(node("ebs", "a1"));
    PluginEvent e = registry.deregister(CSI_NODE, "ebs", "a1").orElseThrow();
    assertOnlyEvent(l, e, Kind.DEREGISTERED, 2, node("ebs", "a1"));
    assertEquals(List.of(), registry.list(CSI_NODE));
    assertEquals(Map.of(), storedRecords());
  }

  @Test
  void deregisterUnknownAlloc_isNoOp_andNeverTouchesOtherInstance() {
    RecordingListener l = subscribeAfterRegistering(node("ebs", "a1"));
    int commits = store.commits().size();
    assertNoOp(l, () -> registry.deregister(CSI_NODE, "ebs", "a2"));
    assertNoOp(l, () -> registry.deregister(CSI_NODE, "other", "a1"));
    assertNoOp(l, () -> registry.deregister(CSI_CONTROLLER, "ebs", "a1"));
    assertTrue(registry.deregister(CSI_NODE, "ebs", "a1").isPresent());
    assertNoOp(l, () -> registry.deregister(CSI_NODE, "ebs", "a1"));
    assertEquals(commits + 1, store.commits().size());
    assertEquals(1, l.events().size());
  }

  @Test
  void eachChangeCommitsOnlyItsOwnKey_andItsTypesEventSequence() {
    for (int i = 0; i < 20; i++) {
      registry.register(node("p" + i, "a" + i));
    }
    registry.register(node("p3", "a3").withVersion("9"));
    registry.deregister(CSI_NODE, "p4", "a4");
    long sequence = 0;
    for (List<StateChange> commit : store.commits()) {
      assertEquals(2, commit.size(), commit.toString());
      assertEquals(new StateChange.Put("registry/sequence/csi-node", SequenceRecord.encode(++sequence)), commit.get(1));
    }
    List<StateChange> last = store.commits().get(store.commits().size() - 1);
    assertEquals(new StateChange.Delete("plugin/csi-node/p4/a4"), last.get(0));
  }

  // ---- newest instance ----

  @Test
  void newestRegisteredInstance_winsForListFindAndDispense() throws Exception {
    registry.register(node("ebs", "old"));
    registry.register(node("ebs", "new"));
    registry.register(node("zfs", "z1"));
    assertEquals(List.of(node("ebs", "new"), node("zfs", "z1")), registry.list(CSI_NODE));
    assertEquals(List.of(node("ebs", "old"), node("ebs", "new"), node("zfs", "z1")), registry.listAll(CSI_NODE));
    assertEquals("new", registry.find(CSI_NODE, "ebs").orElseThrow().allocId());
    assertEquals("client:csi-node/ebs@new", registry.dispense(CSI_NODE, "ebs"));

    // An update of the older instance keeps its place: it does not become the newest.
    registry.register(node("ebs", "old").withVersion("2"));
    assertEquals("new", registry.find(CSI_NODE, "ebs").orElseThrow().allocId());

    // Removing the newest falls back to the older one.
    registry.deregister(CSI_NODE, "ebs", "new");
    assertEquals("old", registry.find(CSI_NODE, "ebs").orElseThrow().allocId());
    assertEquals("client:csi-node/ebs@old", registry.dispense(CSI_NODE, "ebs"));

    // Re-registering a removed key makes it the newest again.
    registry.register(node("ebs", "new"));
    assertEquals("new", registry.find(CSI_NODE, "ebs").orElseThrow().allocId());
  }

  @Test
  void newestOrder_survivesRestart() throws Exception {
    registry.register(node("ebs", "zz-first"));
    registry.register(node("ebs", "aa-second"));
    registry.register(node("ebs", "zz-first").withVersion("2"));
    restart();
    assertEquals("aa-second", registry.find(CSI_NODE, "ebs").orElseThrow().allocId());
    assertEquals(List.of("zz-first", "aa-second"), registry.listAll(CSI_NODE).stream().map(PluginInfo::allocId).toList());
    registry.register(node("ebs", "third"));
    assertEquals("third", registry.find(CSI_NODE, "ebs").orElseThrow().allocId());
  }

  @Test
  void pluginForAlloc_findsExactKeyOnly() {
    registry.register(node("ebs", "a1"));
    assertEquals(node("ebs", "a1"), registry.pluginForAlloc(CSI_NODE, "ebs", "a1").orElseThrow());
    assertTrue(registry.pluginForAlloc(CSI_NODE, "ebs", "a2").isEmpty());
    assertTrue(registry.pluginForAlloc(CSI_CONTROLLER, "ebs", "a1").isEmpty());
  }

  @Test
  void typesAreIndependent_eachWithItsOwnSequence() {
    RecordingListener nodes = subscribe(CSI_NODE);
    RecordingListener controllers = subscribe(CSI_CONTROLLER);
    assertEquals(1, registry.register(node("ebs", "a1")).orElseThrow().sequence());
    assertEquals(1, registry.register(controller("ebs", "a1")).orElseThrow().sequence());
    assertEquals(2, registry.register(node("ebs", "a2")).orElseThrow().sequence());
    assertEquals(2, registry.deregister(CSI_CONTROLLER, "ebs", "a1").orElseThrow().sequence());
    assertEquals(2, nodes.events().size());
    assertEquals(2, controllers.events().size());
    assertTrue(nodes.events().stream().allMatch(e -> e.type() == CSI_NODE));
    assertEquals(List.of(), registry.list(CSI_CONTROLLER));
    assertEquals(2, registry.listAll(CSI_NODE).size());
  }

  // ---- validation ----

  @Test
  void badArguments_nameTheField_andChangeNothing() {
    registry.register(node("ebs", "a1"));
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.register(null)), "info");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.deregister(null, "ebs", "a1")), "type");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.deregister(CSI_NODE, "", "a1")), "name");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.deregister(CSI_NODE, "../x", "a1")), "name");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.deregister(CSI_NODE, "ebs", " ")), "allocId");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.find(CSI_NODE, "a/b")), "name");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.list(null)), "type");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.reconcile(null)), "liveAllocIds");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.subscribe(CSI_NODE, null, DIRECT)), "listener");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> registry.subscribe(CSI_NODE, new RecordingListener(), null)), "executor");
    assertEquals(List.of(node("ebs", "a1")), registry.listAll(CSI_NODE));
    assertEquals(1, store.commits().size());
  }

  static void assertMessage(Exception e, String field) {
    assertTrue(e.getMessage().contains(field), "message should name '" + field + "': " + e.getMessage());
  }

  // ---- persist before publish, failed commits ----

  @Test
  void failedCommit_throws_andChangesNothing_thenSequenceContinuesWithoutGap() {
    RecordingListener l = subscribeAfterRegistering(node("ebs", "a1"));
    store.failNextCommits(3);
    assertThrows(StateStoreException.class, () -> registry.register(node("zfs", "z1")));
    assertThrows(StateStoreException.class, () -> registry.register(node("ebs", "a1").withVersion("2")));
    assertThrows(StateStoreException.class, () -> registry.deregister(CSI_NODE, "ebs", "a1"));
    assertEquals(List.of(node("ebs", "a1")), registry.listAll(CSI_NODE));
    assertEquals(Map.of("plugin/csi-node/ebs/a1", node("ebs", "a1")), storedRecords());
    assertEquals(List.of(), l.events());

    assertEquals(2, registry.register(node("zfs", "z1")).orElseThrow().sequence());
    assertEquals(List.of(2L), l.events().stream().map(PluginEvent::sequence).toList());
  }

  @Test
  void changeIsCommittedBeforeMemoryChangesAndBeforeEventIsPublished() {
    AtomicReference<String> seenAtCommit = new AtomicReference<>();
    store.beforeCommit(changes -> seenAtCommit.set(registry.find(CSI_NODE, "ebs").map(PluginInfo::version).orElse("absent")
        + "/" + store.get("plugin/csi-node/ebs/a1").isPresent()));
    List<String> seenByListener = new ArrayList<>();
    registry.subscribe(CSI_NODE, new PluginListener() {
      @Override
      public void onEvent(PluginEvent event) {
        seenByListener.add(event.kind() + ":" + store.get("plugin/csi-node/ebs/a1").isPresent() + ":"
            + registry.find(CSI_NODE, "ebs").isPresent());
      }
    }, DIRECT);
    registry.register(node("ebs", "a1"));
    assertEquals("absent/false", seenAtCommit.get());
    registry.deregister(CSI_NODE, "ebs", "a1");
    assertEquals("1.0.0/true", seenAtCommit.get());
    assertEquals(List.of("REGISTERED:true:true", "DEREGISTERED:false:false"), seenByListener);
  }

  // ---- restore, confirm, reconcile, grace ----

  @Test
  void restart_restoresEveryRecordAsRestored() throws Exception {
    registry.register(node("ebs", "a1"));
    registry.register(controller("ebs", "a1"));
    registry.register(node("zfs", "z1").withHealth(PluginHealth.unhealthy("boom", T0.plusSeconds(3))));
    restart();
    assertEquals(List.of(node("ebs", "a1").withRestored(true),
        node("zfs", "z1").withHealth(PluginHealth.unhealthy("boom", T0.plusSeconds(3))).withRestored(true)),
        registry.listAll(CSI_NODE));
    assertEquals(List.of(controller("ebs", "a1").withRestored(true)), registry.list(CSI_CONTROLLER));
    assertEquals(List.of(), registry.restoreProblems());
    RecordingListener l = subscribe(CSI_NODE);
    // Sequence numbers go on where they were: a watcher that resumes can tell old events from new ones.
    assertEquals(2, registry.subscribe(CSI_NODE, new RecordingListener(), DIRECT).snapshotSequence());
    assertEquals(1, registry.subscribe(CSI_CONTROLLER, new RecordingListener(), DIRECT).snapshotSequence());
    assertEquals(3, registry.register(node("new", "n1")).orElseThrow().sequence());
    assertEquals(1, l.events().size());
  }

  @Test
  void reRegisterAfterRestart_sameContent_confirmsWithAnUpdatedEvent_recordUntouched() throws Exception {
    registry.register(node("ebs", "a1"));
    restart();
    RecordingListener l = subscribe(CSI_NODE);
    int commits = store.commits().size();
    PluginEvent e = registry.register(node("ebs", "a1").withHealth(PluginHealth.healthy(T0.plusSeconds(500))))
        .orElseThrow();
    PluginInfo confirmed = registry.find(CSI_NODE, "ebs").orElseThrow();
    assertFalse(confirmed.restored());
    assertEquals(T0, confirmed.health().since());
    // Subscribers saw it restored in their snapshot: they are told it no longer is.
    assertEquals(Kind.UPDATED, e.kind());
    assertFalse(e.plugin().restored());
    assertEquals(List.of(e), l.events());
    // One commit, of the event's sequence only: the registration's record is not rewritten.
    assertEquals(commits + 1, store.commits().size());
    assertTrue(store.commits().get(commits).stream().noneMatch(c -> c.key().equals(confirmed.key().storeKey())),
        "record untouched: " + store.commits().get(commits));
    // Confirmed once: registering it again changes nothing.
    assertTrue(registry.register(node("ebs", "a1")).isEmpty());
  }

  @Test
  void reRegisterAfterRestart_changedContent_emitsUpdatedAndConfirms() throws Exception {
    registry.register(node("ebs", "a1"));
    restart();
    PluginEvent e = registry.register(node("ebs", "a1").withVersion("2")).orElseThrow();
    assertEquals(Kind.UPDATED, e.kind());
    assertFalse(e.plugin().restored());
    assertFalse(registry.find(CSI_NODE, "ebs").orElseThrow().restored());
  }

  @Test
  void reconcile_dropsRestoredEntriesOfDeadAllocs_keepsLiveAndConfirmed() throws Exception {
    registry.register(node("dead", "d1"));
    registry.register(controller("dead", "d1"));
    registry.register(node("live", "l1"));
    registry.register(node("confirmed", "c1"));
    restart();
    registry.register(node("confirmed", "c1")); // confirmed: never reconciled away, even though c1 is not "live"
    registry.register(node("fresh", "f1"));     // registered since the restore: likewise
    RecordingListener nodes = subscribe(CSI_NODE);
    RecordingListener controllers = subscribe(CSI_CONTROLLER);

    List<PluginEvent> events = registry.reconcile(Set.of("l1"));

    assertEquals(2, events.size());
    assertTrue(events.stream().allMatch(e -> e.kind() == Kind.DEREGISTERED && e.plugin().allocId().equals("d1")));
    assertEquals(Set.of("confirmed", "fresh", "live"), Set.copyOf(registry.list(CSI_NODE).stream().map(PluginInfo::name).toList()));
    assertTrue(registry.find(CSI_NODE, "live").orElseThrow().restored());
    assertEquals(List.of(), registry.list(CSI_CONTROLLER));
    assertEquals(1, nodes.events().size());
    assertEquals(1, controllers.events().size());
    assertTrue(registry.reconcile(Set.of("l1")).isEmpty());

    restart();
    assertEquals(Set.of("confirmed", "fresh", "live"), Set.copyOf(registry.list(CSI_NODE).stream().map(PluginInfo::name).toList()));
  }

  @Test
  void reconcile_failedCommit_changesNothing() throws Exception {
    registry.register(node("dead", "d1"));
    restart();
    store.failNextCommits(1);
    assertThrows(StateStoreException.class, () -> registry.reconcile(Set.of()));
    assertTrue(registry.find(CSI_NODE, "dead").isPresent());
    assertEquals(1, registry.reconcile(Set.of()).size());
  }

  @Test
  void gracePeriod_dropsRestoredEntriesNobodyConfirmed() throws Exception {
    registry.register(node("confirmed", "c1"));
    registry.register(node("forgotten", "f1"));
    FakeScheduler scheduler = new FakeScheduler();
    restart(builder().restoreGracePeriod(Duration.ofMinutes(5), scheduler));
    RecordingListener l = subscribe(CSI_NODE);
    registry.register(node("confirmed", "c1"));

    scheduler.forwardTime(Duration.ofMinutes(4));
    assertEquals(2, registry.listAll(CSI_NODE).size());
    scheduler.forwardTime(Duration.ofMinutes(1));

    assertEquals(List.of(node("confirmed", "c1")), registry.listAll(CSI_NODE));
    assertEquals(2, l.events().size());
    // The confirmation (restored=false), then the expiry of the one nobody confirmed.
    assertEquals(Kind.UPDATED, l.events().get(0).kind());
    assertEquals("confirmed", l.events().get(0).plugin().name());
    assertEquals(Kind.DEREGISTERED, l.events().get(1).kind());
    assertEquals("forgotten", l.events().get(1).plugin().name());
    assertEquals(0, scheduler.pendingCount());
  }

  @Test
  void gracePeriod_notScheduledWhenNothingRestored_andCancelledOnClose() throws Exception {
    FakeScheduler scheduler = new FakeScheduler();
    restart(builder().restoreGracePeriod(Duration.ofMinutes(5), scheduler));
    assertEquals(0, scheduler.pendingCount());

    registry.register(node("x", "x1"));
    restart(builder().restoreGracePeriod(Duration.ofMinutes(5), scheduler));
    assertEquals(1, scheduler.pendingCount());
    registry.close();
    assertEquals(0, scheduler.pendingCount());
  }

  @Test
  void gracePeriod_failedCommit_isRetriedAfterAnotherPeriod() throws Exception {
    registry.register(node("forgotten", "f1"));
    FakeScheduler scheduler = new FakeScheduler();
    restart(builder().restoreGracePeriod(Duration.ofMinutes(5), scheduler));
    store.failNextCommits(1);
    scheduler.forwardTime(Duration.ofMinutes(5));
    assertEquals(1, registry.listAll(CSI_NODE).size());
    assertEquals(1, scheduler.pendingCount());
    scheduler.forwardTime(Duration.ofMinutes(5));
    assertEquals(List.of(), registry.listAll(CSI_NODE));
  }

  // ---- bad records ----

  @Test
  void unknownVersionRecord_isSkippedReportedAndKept_othersRestored() throws Exception {
    registry.register(node("good", "g1"));
    byte[] future = PluginRecordCodec.encode(node("future", "dead1"), 7);
    future[0] = 2;
    store.put("plugin/csi-node/future/dead1", future);
    restart();

    assertEquals(List.of(node("good", "g1").withRestored(true)), registry.listAll(CSI_NODE));
    assertEquals(1, registry.restoreProblems().size());
    RestoreProblem p = registry.restoreProblems().get(0);
    assertEquals("plugin/csi-node/future/dead1", p.key());
    assertTrue(p.reason().contains("unknown record format version 2"), p.reason());
    assertArrayEquals(future, store.get("plugin/csi-node/future/dead1").orElseThrow(), "skipped record must stay untouched");
  }

  @Test
  void skippedRecord_isDroppedByReconcileOnlyWhenItsAllocIsDead() throws Exception {
    store.put("plugin/csi-node/future/live1", new byte[] {9, 9, 9});
    store.put("plugin/csi-node/future/dead1", new byte[] {9, 9, 9});
    store.put("plugin/unparseable-key", new byte[] {9});
    restart();
    assertEquals(3, registry.restoreProblems().size());
    RecordingListener l = subscribe(CSI_NODE);
    assertEquals(List.of(), registry.reconcile(Set.of("live1")));
    assertTrue(store.get("plugin/csi-node/future/live1").isPresent());
    assertTrue(store.get("plugin/csi-node/future/dead1").isEmpty());
    assertTrue(store.get("plugin/unparseable-key").isPresent());
    assertEquals(List.of(), l.events());
  }

  @Test
  void registeringOverASkippedRecord_replacesIt_andReconcileLeavesTheNewOneAlone() throws Exception {
    store.put("plugin/csi-node/ebs/a1", new byte[] {42});
    restart();
    assertEquals(1, registry.restoreProblems().size());
    assertEquals(Kind.REGISTERED, registry.register(node("ebs", "a1")).orElseThrow().kind());
    registry.reconcile(Set.of());
    assertEquals(Map.of("plugin/csi-node/ebs/a1", node("ebs", "a1")), storedRecords());
    restart();
    assertEquals(List.of(), registry.restoreProblems());
  }

  @Test
  void recordForAnotherKey_orGarbage_isSkipped_foreignKeysIgnored() throws Exception {
    store.put("plugin/csi-node/ebs/a2", PluginRecordCodec.encode(node("ebs", "a1"), 1));
    store.put("plugin/csi-node/zfs/z1", new byte[] {1, 0, 0});
    store.put("plugin/csi-node/empty/e1", new byte[0]);
    store.put("agent/something-else", new byte[] {1, 2, 3});
    restart();
    assertEquals(List.of(), registry.listAll(CSI_NODE));
    assertEquals(List.of("plugin/csi-node/ebs/a2", "plugin/csi-node/empty/e1", "plugin/csi-node/zfs/z1"),
        registry.restoreProblems().stream().map(RestoreProblem::key).toList());
    assertTrue(registry.restoreProblems().get(0).reason().contains("plugin/csi-node/ebs/a1"));
  }

  // ---- dispense ----

  @Test
  void dispense_unknownName_throwsNotFoundNamingTypeAndName() {
    PluginNotFoundException e = assertThrows(PluginNotFoundException.class, () -> registry.dispense(CSI_NODE, "ebs"));
    assertEquals(CSI_NODE, e.type());
    assertEquals("ebs", e.name());
    assertTrue(e.getMessage().contains("csi-node") && e.getMessage().contains("'ebs'"), e.getMessage());
  }

  @Test
  void dispense_typedChecksClientClass() throws Exception {
    registry.register(node("ebs", "a1"));
    assertEquals("client:csi-node/ebs@a1", registry.dispense(CSI_NODE, "ebs", String.class));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> registry.dispense(CSI_NODE, "ebs", Integer.class));
    assertTrue(e.getMessage().contains("java.lang.Integer"), e.getMessage());
  }

  @Test
  void dispense_failingOrNullDispenser_throwsDispenseException_noDispenser_throwsIllegalState() throws Exception {
    registry.close();
    IllegalStateException boom = new IllegalStateException("socket gone");
    registry = PluginRegistry.builder().stateStore(store)
        .dispenser(CSI_NODE, p -> {
          throw boom;
        })
        .dispenser(CSI_CONTROLLER, p -> null)
        .build();
    registry.register(node("ebs", "a1"));
    registry.register(controller("ebs", "a1"));
    PluginDispenseException e = assertThrows(PluginDispenseException.class, () -> registry.dispense(CSI_NODE, "ebs"));
    assertSame(boom, e.getCause());
    assertEquals(node("ebs", "a1"), e.plugin());
    assertTrue(e.getMessage().contains("csi-node/ebs@a1"), e.getMessage());
    assertThrows(PluginDispenseException.class, () -> registry.dispense(CSI_CONTROLLER, "ebs"));

    registry.close();
    registry = PluginRegistry.builder().stateStore(store).build();
    assertTrue(assertThrows(IllegalStateException.class, () -> registry.dispense(CSI_NODE, "ebs")).getMessage().contains("dispenser"));
  }

  // ---- subscriptions ----

  @Test
  void subscribe_givesSnapshotThenEveryLaterEventInOrder() {
    registry.register(node("a", "1"));
    registry.register(node("b", "2"));
    registry.register(node("a", "1").withVersion("2"));
    RecordingListener l = new RecordingListener();
    Subscription s = registry.subscribe(CSI_NODE, l, DIRECT);
    assertEquals(3, s.snapshotSequence());
    assertEquals(List.of(node("a", "1").withVersion("2"), node("b", "2")), s.snapshot());
    l.start(s);
    registry.register(node("c", "3"));
    registry.deregister(CSI_NODE, "a", "1");
    assertEquals(List.of(4L, 5L), l.events().stream().map(PluginEvent::sequence).toList());
    assertEquals(Map.of(node("b", "2").key(), node("b", "2"), node("c", "3").key(), node("c", "3")), l.view());
    assertEquals(List.of(), l.problems());
    assertTrue(s.isActive());
  }

  @Test
  void slowSubscriber_blocksNeitherWritersNorOtherSubscribers() {
    ManualExecutor slow = new ManualExecutor();
    RecordingListener slowListener = subscribe(CSI_NODE, slow);
    RecordingListener fast = subscribe(CSI_NODE);
    for (int i = 0; i < 50; i++) {
      registry.register(node("p" + i, "a"));
    }
    assertEquals(50, fast.events().size());
    assertEquals(0, slowListener.events().size());
    slow.runAll();
    assertEquals(50, slowListener.events().size());
    assertEquals(List.of(), slowListener.problems());
    assertEquals(fast.view(), slowListener.view());
  }

  @Test
  void throwingListener_isLoggedAndIsolated_andKeepsItsSubscription() {
    RecordingListener thrower = new RecordingListener() {
      @Override
      void onEventHook(PluginEvent e) {
        throw new IllegalStateException("listener bug on #" + e.sequence());
      }
    };
    Subscription s = registry.subscribe(CSI_NODE, thrower, DIRECT);
    thrower.start(s);
    RecordingListener other = subscribe(CSI_NODE);
    registry.register(node("a", "1"));
    registry.register(node("b", "2"));
    assertEquals(2, thrower.events().size());
    assertEquals(2, other.events().size());
    assertTrue(s.isActive());
    assertEquals(2, registry.listAll(CSI_NODE).size());
  }

  @Test
  void laggedSubscriber_isClosedWithExplicitSignal_othersUnaffected() throws Exception {
    registry.close();
    registry = builder().maxSubscriberBacklog(3).build();
    ManualExecutor slow = new ManualExecutor();
    RecordingListener lagging = new RecordingListener();
    Subscription s = registry.subscribe(CSI_NODE, lagging, slow);
    lagging.start(s);
    RecordingListener fast = subscribe(CSI_NODE);

    registry.register(node("a", "1"));
    registry.register(node("b", "1"));
    slow.runAll(); // delivers #1, #2
    registry.register(node("c", "1"));
    registry.register(node("d", "1"));
    registry.register(node("e", "1"));
    assertTrue(s.isActive());
    registry.register(node("f", "1")); // 4th undelivered event: over the bound
    assertFalse(s.isActive());
    registry.register(node("g", "1"));
    slow.runAll();

    assertEquals(List.of(1L, 2L), lagging.events().stream().map(PluginEvent::sequence).toList());
    assertEquals(2L, lagging.lagged());
    assertEquals(1, lagging.closedCalls());
    assertEquals(List.of(), lagging.problems());
    assertEquals(7, fast.events().size());

    // Re-subscribing gives a fresh snapshot that includes everything missed.
    Subscription again = registry.subscribe(CSI_NODE, new RecordingListener(), slow);
    assertEquals(7, again.snapshotSequence());
    assertEquals(7, again.snapshot().size());
  }

  @Test
  void subscriptionClose_stopsDelivery_deliversOnClosedOnce() {
    ManualExecutor executor = new ManualExecutor();
    RecordingListener l = new RecordingListener();
    Subscription s = registry.subscribe(CSI_NODE, l, executor);
    l.start(s);
    registry.register(node("a", "1"));
    s.close();
    s.close();
    registry.register(node("b", "1"));
    executor.runAll();
    assertEquals(List.of(), l.events());
    assertEquals(1, l.closedCalls());
    assertNull(l.lagged());
    assertFalse(s.isActive());
  }

  @Test
  void subscriptionClose_fromInsideListener_stopsFurtherEvents() {
    AtomicReference<Subscription> sub = new AtomicReference<>();
    RecordingListener l = new RecordingListener() {
      @Override
      void onEventHook(PluginEvent e) {
        sub.get().close();
      }
    };
    sub.set(registry.subscribe(CSI_NODE, l, DIRECT));
    l.start(sub.get());
    registry.register(node("a", "1"));
    registry.register(node("b", "1"));
    assertEquals(1, l.events().size());
    assertEquals(1, l.closedCalls());
  }

  @Test
  void executorThatRejects_endsSubscriptionWithOnClosed() {
    ManualExecutor executor = new ManualExecutor();
    RecordingListener l = new RecordingListener();
    Subscription s = registry.subscribe(CSI_NODE, l, executor);
    executor.shutdown();
    registry.register(node("a", "1"));
    assertFalse(s.isActive());
    assertEquals(1, l.closedCalls());
    registry.register(node("b", "1"));
    assertEquals(1, l.closedCalls());
    assertEquals(List.of(), l.events());
  }

  // ---- close ----

  @Test
  void close_endsEverySubscription_dropsUndelivered_andIsIdempotent() {
    ManualExecutor executor = new ManualExecutor();
    RecordingListener queued = subscribe(CSI_NODE, executor);
    RecordingListener direct = subscribe(CSI_CONTROLLER);
    registry.register(node("a", "1"));
    registry.close();
    registry.close();
    executor.runAll();
    assertEquals(List.of(), queued.events());
    assertEquals(1, queued.closedCalls());
    assertEquals(1, direct.closedCalls());
  }

  @Test
  void afterClose_writesSubscribeAndDispenseThrow_readsStillAnswer() {
    registry.register(node("a", "1"));
    registry.close();
    assertThrows(IllegalStateException.class, () -> registry.register(node("b", "1")));
    assertThrows(IllegalStateException.class, () -> registry.deregister(CSI_NODE, "a", "1"));
    assertThrows(IllegalStateException.class, () -> registry.reconcile(Set.of()));
    assertThrows(IllegalStateException.class, () -> registry.subscribe(CSI_NODE, new RecordingListener(), DIRECT));
    assertThrows(IllegalStateException.class, () -> registry.dispense(CSI_NODE, "a"));
    assertEquals(1, registry.list(CSI_NODE).size());
    assertEquals(Optional.of(node("a", "1")), registry.find(CSI_NODE, "a"));
  }

  @Test
  void close_leavesStoreOpenUnlessAskedToCloseIt() throws Exception {
    registry.register(node("a", "1"));
    registry.close();
    assertTrue(store.get("plugin/csi-node/a/1").isPresent());
    registry = builder().closeStateStore(true).build();
    registry.close();
    assertThrows(IllegalStateException.class, () -> store.loadAll());
    store = new RecordingStore(reopenStore(store.wrapped()));
  }

  @Test
  void builder_rejectsMissingStoreAndBadValues() {
    assertMessage(assertThrows(IllegalStateException.class, () -> PluginRegistry.builder().build()), "stateStore");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> PluginRegistry.builder().maxSubscriberBacklog(0)), "maxSubscriberBacklog");
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> PluginRegistry.builder().restoreGracePeriod(Duration.ZERO, new FakeScheduler())), "gracePeriod");
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> PluginRegistry.builder().restoreGracePeriod(Duration.ofSeconds(1), null)), "scheduler");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> PluginRegistry.builder().dispenser(null, p -> p)), "type");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> PluginRegistry.builder().clock(null)), "clock");
  }

  @Test
  void eventTime_comesFromInjectedClock() {
    Instant first = clock.instant();
    assertEquals(first, registry.register(node("a", "1")).orElseThrow().time());
    clock.advance(Duration.ofSeconds(42));
    assertEquals(first.plusSeconds(42), registry.register(node("b", "1")).orElseThrow().time());
  }
}
