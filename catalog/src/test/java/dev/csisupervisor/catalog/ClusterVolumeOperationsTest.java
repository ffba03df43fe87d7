package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumeRequest.State;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot, snapshot-delete, modify and register requests on a real etcd (issue 37), without a controller agent
 * (the leader's writes are made here as it makes them): what each ask checks in its transaction, a withdraw after a
 * send that leaves the request cancelled for its undo, what the controller's completions write, and the values as
 * stored.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ClusterVolumeOperationsTest {
  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static final String PLUGIN = "disk.csi";
  private static final Instant NOW = Instant.parse("2026-11-27T09:00:00Z");

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/ops" + PREFIXES.incrementAndGet();
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private ClusterVolumes cli;
  private ClusterVolumes controller;
  private ClusterVolumes.Leadership leader;

  @BeforeAll
  static void startEtcd() throws IOException {
    etcd = EtcdCluster.start(tmp, 1);
  }

  @AfterAll
  static void stopEtcd() {
    if (etcd != null) {
      etcd.close();
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private ClusterVolumes client(String nodeId) {
    ClusterVolumes v = ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.endpoints().split(","))
        .withRequestTimeout(Duration.ofSeconds(2))).prefix(prefix).nodeId(nodeId).leaseTtl(Duration.ofSeconds(2))
        .build();
    closeables.add(v);
    return v;
  }

  private void setUp() throws Exception {
    cli = client("cli");
    controller = client("n1");
    leader = controller.lead(PLUGIN).orElseThrow();
    cli.register(volume("vol-1"));
  }

  private static ClusterVolume volume(String id) {
    return new ClusterVolume(PLUGIN, id, 1 << 20, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(),
        Map.of("type", "ssd"), Map.of("ctx", "1"));
  }

  private static ClusterVolumeRequest snapshot(String name, String vol) {
    return ClusterVolumeRequest.snapshot(PLUGIN, name, vol, Map.of("tier", "cold"), Optional.empty(), NOW);
  }

  /** The controller agent's record of a snapshot it cut: ready or not. */
  private String cut(String name, boolean ready) throws Exception {
    ClusterVolumeRequest r = controller.request(Kind.SNAPSHOT, PLUGIN, name).orElseThrow();
    ClusterVolumeRequest sent = controller.updateRequest(leader, r, r.sending("n1", NOW)).orElseThrow();
    String id = "snap-" + name;
    ClusterVolumeSnapshot s = new ClusterVolumeSnapshot(PLUGIN, id, name, "vol-1", 1 << 20, Optional.of(NOW), ready);
    assertTrue(controller.recordSnapshot(leader, sent, s, ready ? sent.done(id)
        : sent.notReady(id, NOW.plusSeconds(1), "cut at " + NOW + ", not ready")).isPresent());
    return id;
  }

  @Test
  void aSnapshotIsAskedOfARegisteredVolumeNotBeingDeleted_andADeleteOfItsSourceWaitsForIt() throws Exception {
    setUp();
    VolumeStateException unknown = assertThrows(VolumeStateException.class, () -> cli.ask(snapshot("s", "vol-x")));
    assertEquals("snapshot of disk.csi/s refused: volume vol-x of plugin disk.csi is not registered",
        unknown.getMessage());

    ClusterVolumeRequest asked = cli.ask(snapshot("s", "vol-1"));
    assertEquals(asked.revision(), cli.ask(snapshot("s", "vol-1")).revision(), "asked again: as stored");
    VolumeStateException other = assertThrows(VolumeStateException.class, () -> cli.ask(ClusterVolumeRequest
        .snapshot(PLUGIN, "s", "vol-1", Map.of(), Optional.empty(), NOW)));
    assertTrue(other.getMessage().contains("is pending with other content (from volume vol-1, parameters "
        + "{tier=cold})"), other.getMessage());

    VolumeStateException deleting = assertThrows(VolumeStateException.class, () -> cli.requestDelete(
        ClusterVolumeRequest.delete(PLUGIN, "vol-1", Optional.empty(), NOW)));
    assertTrue(deleting.getMessage().contains("a snapshot of it is being cut: snapshot of disk.csi/s (PENDING)"),
        deleting.getMessage());

    ClusterVolumeRequest.Spec clone = new ClusterVolumeRequest.Spec(0, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER),
        false, "", Map.of(), List.of(), List.of()).from(VolumeSource.volume("vol-1"));
    cli.ask(ClusterVolumeRequest.create(PLUGIN, "copy", clone, Optional.empty(), NOW));
    String id = cut("s", true);
    VolumeStateException cloning = assertThrows(VolumeStateException.class, () -> cli.requestDelete(
        ClusterVolumeRequest.delete(PLUGIN, "vol-1", Optional.empty(), NOW)));
    assertTrue(cloning.getMessage().contains("it is being cloned: create of disk.csi/copy (PENDING)"),
        cloning.getMessage());
    assertTrue(cli.withdraw(Kind.CREATE, PLUGIN, "copy"));
    assertEquals(Optional.of(new ClusterVolumeSnapshot(PLUGIN, id, "s", "vol-1", 1 << 20, Optional.of(NOW), true)),
        cli.snapshot(PLUGIN, id));
    assertEquals(List.of(cli.snapshot(PLUGIN, id).orElseThrow()), cli.read().snapshots());
    // Done: the source may go now; and a snapshot of a volume being deleted is refused.
    cli.requestDelete(ClusterVolumeRequest.delete(PLUGIN, "vol-1", Optional.empty(), NOW)).orElseThrow();
    VolumeStateException gone = assertThrows(VolumeStateException.class, () -> cli.ask(snapshot("t", "vol-1")));
    assertTrue(gone.getMessage().contains("is being deleted"), gone.getMessage());
  }

  @Test
  void aSnapshotsDelete_waitsForItsCut_andForCreatesFromIt_andGoesWithItsRequests() throws Exception {
    setUp();
    cli.ask(snapshot("s", "vol-1"));
    String id = cut("s", false);
    VolumeStateException notReady = assertThrows(VolumeStateException.class, () -> cli.requestSnapshotDelete(
        ClusterVolumeRequest.deleteSnapshot(PLUGIN, id, Optional.empty(), NOW)));
    assertTrue(notReady.getMessage().contains("it is not ready yet") && notReady.getMessage()
        .contains("cluster volume cancel snapshot disk.csi s"), notReady.getMessage());
    ClusterVolumeRequest pending = controller.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow();
    assertTrue(controller.recordSnapshot(leader, pending, new ClusterVolumeSnapshot(PLUGIN, id, "s", "vol-1", 1 << 20,
        Optional.of(NOW), true), pending.done(id)).isPresent());

    ClusterVolumeRequest.Spec spec = new ClusterVolumeRequest.Spec(0, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER),
        false, "", Map.of(), List.of(), List.of()).from(VolumeSource.snapshot(id));
    cli.ask(ClusterVolumeRequest.create(PLUGIN, "restore", spec, Optional.empty(), NOW));
    VolumeStateException creating = assertThrows(VolumeStateException.class, () -> cli.requestSnapshotDelete(
        ClusterVolumeRequest.deleteSnapshot(PLUGIN, id, Optional.empty(), NOW)));
    assertTrue(creating.getMessage().contains("a volume is being made from it: create of disk.csi/restore (PENDING)"),
        creating.getMessage());
    assertTrue(cli.withdraw(Kind.CREATE, PLUGIN, "restore"), "never sent: withdrawn at once");
    assertTrue(cli.request(Kind.CREATE, PLUGIN, "restore").isEmpty());

    ClusterVolumeRequest delete = cli.requestSnapshotDelete(ClusterVolumeRequest.deleteSnapshot(PLUGIN, id,
        Optional.empty(), NOW)).orElseThrow();
    VolumeStateException restoring = assertThrows(VolumeStateException.class, () -> cli.ask(
        ClusterVolumeRequest.create(PLUGIN, "late", spec, Optional.empty(), NOW)));
    assertTrue(restoring.getMessage().contains("snapshot " + id + " of plugin disk.csi is being deleted"),
        restoring.getMessage());
    assertTrue(controller.completeSnapshotDelete(leader, controller.request(Kind.SNAPSHOT_DELETE, PLUGIN, id)
        .orElseThrow()));
    assertTrue(cli.snapshot(PLUGIN, id).isEmpty());
    assertTrue(cli.read().requests().isEmpty(), "the delete and the done snapshot request went with it: "
        + cli.read().requests());
    assertEquals(Optional.empty(), cli.requestSnapshotDelete(delete), "not recorded: nothing to delete");
  }

  @Test
  void aWithdrawAfterTheSend_leavesTheRequestCancelledForItsUndo_andAnAskAgainRevivesIt() throws Exception {
    setUp();
    cli.ask(snapshot("s", "vol-1"));
    ClusterVolumeRequest r = controller.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow();
    controller.updateRequest(leader, r, r.sending("n1", NOW)).orElseThrow();
    assertTrue(cli.withdraw(Kind.SNAPSHOT, PLUGIN, "s"));
    ClusterVolumeRequest cancelled = cli.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow();
    assertEquals(State.CANCELLED, cancelled.state());
    assertTrue(cli.withdraw(Kind.SNAPSHOT, PLUGIN, "s"), "withdrawn again: still cancelled");
    assertEquals(State.PENDING, cli.ask(snapshot("s", "vol-1")).state(), "asked again: pending afresh");
    assertEquals(0, cli.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow().attempts());

    assertTrue(cli.withdraw(Kind.SNAPSHOT, PLUGIN, "s"));
    assertTrue(cli.request(Kind.SNAPSHOT, PLUGIN, "s").isEmpty(), "never sent: removed at once");
    cli.ask(snapshot("s", "vol-1"));
    r = controller.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow();
    controller.updateRequest(leader, r, r.sending("n1", NOW)).orElseThrow();
    cli.withdraw(Kind.SNAPSHOT, PLUGIN, "s");
    String id = "snap-undone";
    ClusterVolumeRequest c = controller.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow();
    assertFalse(controller.recordSnapshot(leader, controller.request(Kind.SNAPSHOT, PLUGIN, "s").orElseThrow()
        .withRevision(1), new ClusterVolumeSnapshot(PLUGIN, id, "s", "vol-1", 0, Optional.empty(), true), c.done(id))
        .isPresent(), "the cut's answer written over an old read: nothing");
    assertTrue(controller.completeCancel(leader, c, Optional.of(id)));
    assertTrue(cli.read().requests().isEmpty() && cli.read().snapshots().isEmpty());
  }

  @Test
  void modify_oneAtATimePerVolume_mergedIntoTheRecord_andRegister_onlyOfAnUnregisteredVolume() throws Exception {
    setUp();
    cli.ask(ClusterVolumeRequest.modify(PLUGIN, "vol-1", Map.of("iops", "3000"), Optional.empty(), NOW));
    VolumeStateException second = assertThrows(VolumeStateException.class, () -> cli.ask(ClusterVolumeRequest
        .modify(PLUGIN, "vol-1", Map.of("iops", "1"), Optional.empty(), NOW)));
    assertTrue(second.getMessage().contains("one modify per volume at a time"), second.getMessage());
    ClusterVolumeRequest m = controller.request(Kind.MODIFY, PLUGIN, "vol-1").orElseThrow();
    ClusterVolumeRequest sent = controller.updateRequest(leader, m, m.sending("n1", NOW)).orElseThrow();
    assertTrue(controller.completeModify(leader, sent));
    assertEquals(Map.of("iops", "3000"), cli.volume(PLUGIN, "vol-1").orElseThrow().mutableParameters());
    assertEquals(Map.of("ctx", "1"), cli.volume(PLUGIN, "vol-1").orElseThrow().volumeContext());
    assertEquals(State.PENDING, cli.ask(ClusterVolumeRequest.modify(PLUGIN, "vol-1", Map.of("tier", "gold"),
        Optional.empty(), NOW)).state(), "a done modify is replaced by the next");

    VolumeStateException registered = assertThrows(VolumeStateException.class, () -> cli.ask(ClusterVolumeRequest
        .register(volume("vol-1"), false, "", Optional.empty(), NOW)));
    assertTrue(registered.getMessage().contains("is registered already"), registered.getMessage());
    ClusterVolumeRequest reg = cli.ask(ClusterVolumeRequest.register(volume("vol-2"), true, "", Optional.empty(), NOW));
    assertTrue(reg.spec().block());
    ClusterVolumeRequest stored = controller.request(Kind.REGISTER, PLUGIN, "vol-2").orElseThrow();
    assertEquals(reg.spec(), stored.spec(), "the spec as stored");
    assertTrue(controller.completeRegister(leader, stored, stored.registered(false)));
    ClusterVolume v2 = cli.volume(PLUGIN, "vol-2").orElseThrow();
    assertFalse(v2.validated());
    assertEquals(volume("vol-2").withValidated(false), v2);
  }

  @Test
  void badInput_namedByField() {
    IllegalArgumentException noParams = assertThrows(IllegalArgumentException.class,
        () -> ClusterVolumeRequest.modify(PLUGIN, "v", Map.of(), Optional.empty(), NOW));
    assertTrue(noParams.getMessage().contains("mutableParameters"), noParams.getMessage());
    IllegalArgumentException noModes = assertThrows(IllegalArgumentException.class, () -> ClusterVolumeRequest
        .register(new ClusterVolume(PLUGIN, "v", 0, Set.of(), List.of(), Map.of(), Map.of()), false, "",
            Optional.empty(), NOW));
    assertTrue(noModes.getMessage().contains("accessModes"), noModes.getMessage());
    IllegalArgumentException blankSnapshot = assertThrows(IllegalArgumentException.class,
        () -> ClusterVolumeRequest.deleteSnapshot(PLUGIN, "", Optional.empty(), NOW));
    assertTrue(blankSnapshot.getMessage().contains("snapshotId"), blankSnapshot.getMessage());
    IllegalArgumentException size = assertThrows(IllegalArgumentException.class, () -> new ClusterVolumeSnapshot(PLUGIN,
        "snap-1", "n", "v", -1, Optional.empty(), true));
    assertTrue(size.getMessage().startsWith("sizeBytes must not be negative"), size.getMessage());
    IllegalArgumentException source = assertThrows(IllegalArgumentException.class, () -> VolumeSource.snapshot(""));
    assertTrue(source.getMessage().contains("snapshotId"), source.getMessage());
    IllegalArgumentException snapshotOfNothing = assertThrows(IllegalArgumentException.class,
        () -> new ClusterVolumeRequest(Kind.SNAPSHOT, PLUGIN, "s", ClusterVolumeRequest.Spec.NONE, Optional.empty(),
            State.PENDING, "", "", 0, "", Optional.empty(), Optional.empty(), NOW, 0));
    assertTrue(snapshotOfNothing.getMessage().startsWith("source must be the volume"), snapshotOfNothing.getMessage());
    assertThrows(IllegalStateException.class, () -> snapshot("s", "v").undoRetryAt(NOW, "not cancelled"));
    assertEquals(Kind.SNAPSHOT_DELETE, Kind.parse("kind", "snapshot-delete"));
    IllegalArgumentException kind = assertThrows(IllegalArgumentException.class, () -> Kind.parse("kind", "resize"));
    assertTrue(kind.getMessage().startsWith("kind must be one of"), kind.getMessage());
  }

  @Test
  void valuesRoundTrip_andAVolumeWrittenBeforeTheNewFieldsReadsAsMadeFromNothingAndValidated() {
    ClusterVolume v = new ClusterVolume(PLUGIN, "v", 5, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(),
        Map.of(), Map.of(), Optional.of(VolumeSource.snapshot("snap-1")), Map.of("iops", "1"), false);
    assertEquals(v, VolumeCodec.decodeVolume(VolumeCodec.encode(v)));
    ClusterVolumeRequest r = ClusterVolumeRequest.create(PLUGIN, "n", new ClusterVolumeRequest.Spec(0, 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of())
        .from(VolumeSource.volume("v")).withMutableParameters(Map.of("iops", "2")), Optional.empty(), NOW);
    assertEquals(r, VolumeCodec.decodeRequest(VolumeCodec.encode(r), 0));
    ClusterVolumeSnapshot s = new ClusterVolumeSnapshot(PLUGIN, "snap-1", "n", "v", 7, Optional.empty(), false);
    assertEquals(s, VolumeCodec.decodeSnapshot(VolumeCodec.encode(s)));
    String old = "{\"format\":1,\"plugin\":\"disk.csi\",\"volume\":\"v\",\"capacityBytes\":5,\"accessModes\":[],"
        + "\"accessibleTopology\":[],\"parameters\":{},\"context\":{}}";
    ClusterVolume read = VolumeCodec.decodeVolume(com.google.protobuf.ByteString.copyFromUtf8(old));
    assertTrue(read.validated() && read.source().isEmpty() && read.mutableParameters().isEmpty());
  }
}
