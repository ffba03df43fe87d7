package dev.csisupervisor.catalog;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumeRequest.Spec;
import dev.csisupervisor.catalog.ClusterVolumeRequest.State;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cluster volumes on a real three-member etcd: claims raced by several nodes (each its own client, on its own
 * member), the access-mode rules across nodes, topology, the controller election and its fencing, create and
 * delete requests (asked idempotently by name, their outcome written by the elected controller agent only, with the
 * volume in one transaction; a delete refused while claimed and refusing claims while asked), and bad input.
 */
class ClusterVolumesTest {
  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static final String PLUGIN = "disk.csi";
  private static final Instant NOW = Instant.parse("2026-11-26T09:00:00Z");

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/cv" + PREFIXES.incrementAndGet();
  private final List<AutoCloseable> closeables = new ArrayList<>();

  @BeforeAll
  static void startEtcd() throws IOException {
    etcd = EtcdCluster.start(tmp, 3);
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

  /** A node's own client, first on member {@code i % 3}, then the others. */
  private ClusterVolumes node(String nodeId, int i) {
    List<String> endpoints = new ArrayList<>();
    for (int k = 0; k < 3; k++) {
      endpoints.add(etcd.member((i + k) % 3).endpoint());
    }
    ClusterVolumes v = ClusterVolumes.builder().etcd(EtcdOptions.of(endpoints.toArray(String[]::new))
            .withRequestTimeout(Duration.ofSeconds(2))).prefix(prefix).nodeId(nodeId)
        .leaseTtl(Duration.ofSeconds(2)).build();
    closeables.add(v);
    return v;
  }

  private static ClusterVolume volume(String id, VolumeAccessMode... modes) {
    return new ClusterVolume(PLUGIN, id, 1 << 30, Set.of(modes), List.of(), Map.of("type", "ssd"), Map.of("ctx", "1"));
  }

  private static ClaimRequest request(String node, String alloc, String vol, VolumeAccessMode mode, boolean readOnly) {
    return new ClaimRequest(PLUGIN, vol, node, alloc, mode, readOnly, "csi-" + node, Map.of());
  }

  @Test
  void singleWriterRace_exactlyOneWinsEveryRound() throws Exception {
    int nodes = 5;
    int rounds = 12;
    List<ClusterVolumes> clients = new ArrayList<>();
    for (int n = 0; n < nodes; n++) {
      clients.add(node("n" + n, n));
    }
    Random random = new Random(28);
    ExecutorService pool = Executors.newFixedThreadPool(nodes);
    try {
      for (int round = 0; round < rounds; round++) {
        String vol = "vol-" + round;
        VolumeAccessMode mode = round % 2 == 0 ? VolumeAccessMode.SINGLE_NODE_WRITER : VolumeAccessMode.MULTI_NODE_SINGLE_WRITER;
        clients.get(0).register(volume(vol));
        List<Integer> order = new ArrayList<>(List.of(0, 1, 2, 3, 4));
        Collections.shuffle(order, random);
        CyclicBarrier start = new CyclicBarrier(nodes);
        List<Future<Object>> results = new ArrayList<>();
        for (int n : order) {
          results.add(pool.submit(() -> {
            start.await(10, TimeUnit.SECONDS);
            try {
              return clients.get(n).claim(request("n" + n, "a" + n, vol, mode, false));
            } catch (ClaimRefusedException e) {
              return e;
            }
          }));
        }
        List<ClusterClaim> won = new ArrayList<>();
        List<ClaimRefusedException> lost = new ArrayList<>();
        for (Future<Object> f : results) {
          Object o = f.get(30, TimeUnit.SECONDS);
          if (o instanceof ClusterClaim c) {
            won.add(c);
          } else {
            lost.add((ClaimRefusedException) o);
          }
        }
        assertEquals(1, won.size(), "round " + round + ": exactly one writer wins, got " + won);
        ClusterClaim winner = won.get(0);
        for (ClaimRefusedException e : lost) {
          assertEquals(ClaimRefusedException.Reason.ACCESS_MODE, e.reason(), e.getMessage());
          assertEquals(winner, e.holder().orElseThrow(), "the refusal names the winner");
          assertTrue(e.getMessage().contains("node " + winner.nodeId() + ", alloc " + winner.allocId()), e.getMessage());
        }
        assertEquals(List.of(winner), clients.get(3).claims(PLUGIN, vol), "etcd holds the winner only");
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** A snapshot's content, without its revision (a mirror's is its last event's, a read's the store's). */
  private static String content(VolumesSnapshot s) {
    java.util.function.Function<List<?>, String> sorted = l -> l.stream().map(Object::toString).sorted().toList().toString();
    return sorted.apply(s.volumes()) + sorted.apply(s.claims().stream().map(c -> c.withRevision(0)).toList())
        + sorted.apply(s.attachments()) + new java.util.TreeMap<>(s.controllers()) + new java.util.TreeSet<>(s.liveNodes())
        + sorted.apply(s.requests()) + new java.util.TreeMap<>(s.stoppedNodes()) + sorted.apply(s.damaged());
  }

  /** A claim reads only its volume's claims (those its guard lists); a released one's line goes at the next claim. */
  @Test
  void theGuardListsTheVolumesClaims_aReleasedOnesLineGoes_aForeignLineIsIgnored() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    a.register(volume("g"));
    a.register(volume("other"));
    CatalogKeys keys = CatalogKeys.of(prefix);
    a.claim(request("a", "x", "g", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    assertTrue(a.release(PLUGIN, "g", "a", "x"));
    b.claim(request("b", "y", "other", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.member(2).endpoint()))) {
      String guard = keys.claimGuardKey(PLUGIN, "g");
      String listing = side.range(dev.csisupervisor.catalog.etcdpb.RangeRequest.newBuilder()
          .setKey(EtcdClient.bytes(guard)).build()).getKvs(0).getValue().toStringUtf8();
      assertEquals("a/" + PLUGIN + "/g/x", listing);
      // A line naming another volume's claim (b's, which holds "other" single-writer) holds nothing here.
      side.txn(dev.csisupervisor.catalog.etcdpb.TxnRequest.newBuilder().addSuccess(EtcdOps.put(guard,
          EtcdClient.bytes(listing + "\nb/" + PLUGIN + "/other/y"), 0)).build());
      b.claim(request("b", "z", "g", VolumeAccessMode.SINGLE_NODE_WRITER, false));
      assertEquals("b/" + PLUGIN + "/g/z", side.range(dev.csisupervisor.catalog.etcdpb.RangeRequest.newBuilder()
          .setKey(EtcdClient.bytes(guard)).build()).getKvs(0).getValue().toStringUtf8());
    }
    assertEquals(List.of("z"), a.claims(PLUGIN, "g").stream().map(ClusterClaim::allocId).toList());
  }

  /** Issue 35: the controller agent's reads come from a watch-fed mirror: none while nothing changes. */
  @Test
  void theMirror_isWhatADirectReadSays_andAnIdleRoundMakesNoEtcdRequest() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    ClusterVolumes direct = node("c", 2);
    List<Boolean> claimSeenAtHint = new java.util.concurrent.CopyOnWriteArrayList<>();
    closeables.add(a.watchChanges(() -> claimSeenAtHint.add(a.read().claims().stream()
        .anyMatch(c -> c.allocId().equals("x")))));
    await().atMost(Duration.ofSeconds(10)).until(() -> ((EtcdClusterVolumes) a).mirrorSynced());
    b.register(volume("m1"));
    b.register(volume("m2"));
    b.claim(request("b", "x", "m1", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    a.rememberCapabilities(a.lead(PLUGIN).orElseThrow(), Set.of("PUBLISH_UNPUBLISH_VOLUME"));
    b.markStopped();
    await().atMost(Duration.ofSeconds(10)).until(() -> content(a.read()).equals(content(direct.read())));
    assertTrue(claimSeenAtHint.contains(true), "a change is in the mirror when its hint comes: " + claimSeenAtHint);

    // What an idle controller round asks: who leads, whether the plugin publishes, the snapshot.
    long before = a.etcdRequests();
    for (int i = 0; i < 100; i++) {
      assertTrue(a.lead(PLUGIN).isPresent());
      assertTrue(a.controllerPublishes(PLUGIN));
      a.read();
    }
    assertEquals(before, a.etcdRequests(), "no etcd request while nothing changes");

    b.release(PLUGIN, "m1", "b", "x");
    b.deregister(PLUGIN, "m2");
    await().atMost(Duration.ofSeconds(10)).until(() -> content(a.read()).equals(content(direct.read())));
  }

  @Test
  void theMirror_afterItsMemberDied_isListedAgain_withWhatChangedMeanwhile() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    ClusterVolumes direct = node("c", 2);
    AtomicInteger hints = new AtomicInteger();
    closeables.add(a.watchChanges(hints::incrementAndGet));
    await().atMost(Duration.ofSeconds(10)).until(() -> ((EtcdClusterVolumes) a).mirrorSynced());
    b.register(volume("k1"));
    await().atMost(Duration.ofSeconds(10)).until(() -> content(a.read()).equals(content(direct.read())));
    EtcdCluster.Member watched = etcd.member(0);
    etcd.kill(watched);
    try {
      b.register(volume("k2"));
      b.claim(request("b", "y", "k2", VolumeAccessMode.SINGLE_NODE_WRITER, false));
      // Down, the mirror is not used (a read goes to etcd); listed again, it has what changed meanwhile.
      await().atMost(Duration.ofSeconds(15)).until(() -> ((EtcdClusterVolumes) a).mirrorSynced()
          && content(a.read()).equals(content(direct.read())));
    } finally {
      etcd.restart(watched);
    }
  }

  @Test
  void changeHints_comeForClaimsMadeElsewhere_andAgainAfterTheWatchedMemberDied() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    b.register(volume("hinted"));
    AtomicInteger hints = new AtomicInteger();
    closeables.add(a.watchChanges(hints::incrementAndGet));
    // The watch may not be created yet when a first claim lands: claim again until a hint comes.
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      b.claim(request("b", "x" + hints.get(), "hinted", VolumeAccessMode.MULTI_NODE_MULTI_WRITER, false));
      return hints.get() > 0;
    });
    EtcdCluster.Member watched = etcd.member(0);
    etcd.kill(watched);
    try {
      int before = hints.get();
      await().atMost(Duration.ofSeconds(15)).until(() -> {
        b.release(PLUGIN, "hinted", "b", "y");
        b.claim(request("b", "y", "hinted", VolumeAccessMode.MULTI_NODE_MULTI_WRITER, false));
        return hints.get() > before + 1; // the one given when the watch is back, and one for a change after it
      });
    } finally {
      etcd.restart(watched);
    }
  }

  @Test
  void aClaimKeepsItsAccessType_anotherForTheSameAllocationIsRefused_andAnOldClaimWithoutOneIsAMount()
      throws Exception {
    ClusterVolumes a = node("a", 0);
    a.register(volume("raw"));
    ClaimRequest block = new ClaimRequest(PLUGIN, "raw", "a", "x", VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-a",
        Map.of(), ClaimAccess.BLOCK);
    a.claim(block);
    assertEquals(ClaimAccess.BLOCK, a.claims(PLUGIN, "raw").get(0).access());
    ClaimRefusedException e = assertThrows(ClaimRefusedException.class,
        () -> a.claim(request("a", "x", "raw", VolumeAccessMode.SINGLE_NODE_WRITER, false)));
    assertEquals(ClaimRefusedException.Reason.ALREADY_CLAIMED_OTHERWISE, e.reason());
    assertTrue(e.getMessage().contains("SINGLE_NODE_WRITER, block"), e.getMessage());

    ClusterClaim old = VolumeCodec.decodeClaim(EtcdClient.bytes("{\"format\":1,\"plugin\":\"" + PLUGIN + "\","
        + "\"volume\":\"v\",\"node\":\"a\",\"alloc\":\"x\",\"mode\":\"SINGLE_NODE_WRITER\",\"readOnly\":false,"
        + "\"csiNodeId\":\"csi-a\",\"since\":\"2026-11-26T00:00:00Z\"}"));
    assertEquals(ClaimAccess.MOUNT, old.access(), "written before the access type was kept");
    ClusterClaim xfs = new ClusterClaim(PLUGIN, "v", "a", "y", VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-a",
        Instant.EPOCH, ClaimAccess.mount("xfs"));
    assertEquals(xfs, VolumeCodec.decodeClaim(VolumeCodec.encode(xfs)));
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> new ClaimAccess(true, "ext4"));
    assertTrue(bad.getMessage().contains("fsType"), bad.getMessage());
  }

  @Test
  void sameAllocationAgain_isGrantedAsItStands_andAnotherModeIsRefused() throws Exception {
    ClusterVolumes a = node("a", 0);
    a.register(volume("v"));
    ClusterClaim first = a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    ClusterClaim again = a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    assertTrue(first.sameAs(again), again.toString());
    assertTrue(again.revision() > first.revision(), "taken again: a new revision (" + first.revision() + " then "
        + again.revision() + ")");
    ClaimRefusedException e = assertThrows(ClaimRefusedException.class,
        () -> a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, true)));
    assertEquals(ClaimRefusedException.Reason.ALREADY_CLAIMED_OTHERWISE, e.reason());
  }

  @Test
  void readersAndWriters_followEveryClaimsMode() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    ClusterVolumes c = node("c", 2);
    // Multi-node single writer: one writer anywhere, readers everywhere.
    a.register(volume("msw"));
    a.claim(request("a", "w1", "msw", VolumeAccessMode.MULTI_NODE_SINGLE_WRITER, false));
    b.claim(request("b", "r1", "msw", VolumeAccessMode.MULTI_NODE_SINGLE_WRITER, true));
    c.claim(request("c", "r2", "msw", VolumeAccessMode.MULTI_NODE_SINGLE_WRITER, true));
    // A reader-only claim binds every claim to reading: not while a writer holds the volume.
    ClaimRefusedException readerOnly = assertThrows(ClaimRefusedException.class,
        () -> c.claim(request("c", "r3", "msw", VolumeAccessMode.MULTI_NODE_READER_ONLY, true)));
    assertTrue(readerOnly.getMessage().contains("readers only"), readerOnly.getMessage());
    ClaimRefusedException second = assertThrows(ClaimRefusedException.class,
        () -> c.claim(request("c", "w2", "msw", VolumeAccessMode.MULTI_NODE_SINGLE_WRITER, false)));
    assertTrue(second.getMessage().contains("node a, alloc w1"), second.getMessage());

    // Reader-only: a writer is refused whatever mode it asks for, as the readers' mode binds it.
    a.register(volume("ro"));
    a.claim(request("a", "r", "ro", VolumeAccessMode.MULTI_NODE_READER_ONLY, true));
    b.claim(request("b", "r", "ro", VolumeAccessMode.MULTI_NODE_READER_ONLY, true));
    ClaimRefusedException w = assertThrows(ClaimRefusedException.class,
        () -> c.claim(request("c", "w", "ro", VolumeAccessMode.MULTI_NODE_MULTI_WRITER, false)));
    assertEquals(ClaimRefusedException.Reason.ACCESS_MODE, w.reason());
    assertTrue(w.getMessage().contains("readers only"), w.getMessage());

    // Single node: a second node is refused even for reading; the same node may add a reader.
    a.register(volume("snw"));
    a.claim(request("a", "w", "snw", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    a.claim(request("a", "r", "snw", VolumeAccessMode.SINGLE_NODE_WRITER, true));
    ClaimRefusedException other = assertThrows(ClaimRefusedException.class,
        () -> b.claim(request("b", "r", "snw", VolumeAccessMode.MULTI_NODE_READER_ONLY, true)));
    assertTrue(other.getMessage().contains("one node"), other.getMessage());

    // Multi-writer: many writers on many nodes.
    a.register(volume("mmw"));
    for (ClusterVolumes n : List.of(a, b, c)) {
      String id = n == a ? "a" : n == b ? "b" : "c";
      n.claim(request(id, "w", "mmw", VolumeAccessMode.MULTI_NODE_MULTI_WRITER, false));
    }
    assertEquals(3, a.claims(PLUGIN, "mmw").size());

    // A release frees the volume for the next writer.
    assertTrue(a.release(PLUGIN, "msw", "a", "w1"));
    assertFalse(a.release(PLUGIN, "msw", "a", "w1"), "released twice: nothing");
    c.claim(request("c", "w2", "msw", VolumeAccessMode.MULTI_NODE_SINGLE_WRITER, false));
  }

  @Test
  void topologyModesAndRegistration_areCheckedBeforeAnyPut() throws Exception {
    ClusterVolumes a = node("a", 0);
    a.register(new ClusterVolume(PLUGIN, "zonal", 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER),
        List.of(Map.of("zone", "z1"), Map.of("zone", "z2", "rack", "r9")), Map.of(), Map.of()));
    ClaimRefusedException far = assertThrows(ClaimRefusedException.class, () -> a.claim(new ClaimRequest(PLUGIN, "zonal",
        "a", "x", VolumeAccessMode.SINGLE_NODE_WRITER, false, "", Map.of("zone", "z2", "rack", "r1"))));
    assertEquals(ClaimRefusedException.Reason.TOPOLOGY, far.reason());
    assertTrue(far.getMessage().contains("zone=z2"), far.getMessage());
    a.claim(new ClaimRequest(PLUGIN, "zonal", "a", "x", VolumeAccessMode.SINGLE_NODE_WRITER, false, "",
        Map.of("zone", "z2", "rack", "r9", "host", "h")));

    ClaimRefusedException mode = assertThrows(ClaimRefusedException.class, () -> a.claim(new ClaimRequest(PLUGIN,
        "zonal", "a", "y", VolumeAccessMode.MULTI_NODE_READER_ONLY, true, "", Map.of("zone", "z1"))));
    assertEquals(ClaimRefusedException.Reason.MODE_NOT_OFFERED, mode.reason());

    ClaimRefusedException unknown = assertThrows(ClaimRefusedException.class,
        () -> a.claim(request("a", "x", "never-registered", VolumeAccessMode.SINGLE_NODE_WRITER, false)));
    assertEquals(ClaimRefusedException.Reason.NOT_REGISTERED, unknown.reason());
    assertEquals(List.of(), a.claims(PLUGIN, "never-registered"));
  }

  @Test
  void volumeIdsWithSlashes_areOneKeySegment_andDoNotShareClaims() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    a.register(volume("projects/p/disks/d"));
    a.register(volume("projects/p/disks/d/x%2F"));
    a.claim(request("a", "x", "projects/p/disks/d", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    b.claim(request("b", "x", "projects/p/disks/d/x%2F", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    assertEquals("a", a.claims(PLUGIN, "projects/p/disks/d").get(0).nodeId());
    assertEquals("b", a.claims(PLUGIN, "projects/p/disks/d/x%2F").get(0).nodeId());
    VolumesSnapshot s = a.read();
    assertEquals(2, s.volumes().size());
    assertEquals(Set.of("projects/p/disks/d", "projects/p/disks/d/x%2F"),
        Set.copyOf(s.claims().stream().map(ClusterClaim::volumeId).toList()));
    CatalogKeys keys = CatalogKeys.of(prefix);
    String key = keys.claimKey(PLUGIN, "projects/p/disks/d", "a", "x");
    assertEquals(Optional.of(new CatalogKeys.ClaimPath(PLUGIN, "projects/p/disks/d", "a", "x")), keys.parseClaimKey(key));
  }

  @Test
  void claimsAreOnNoLease_andOnlyTheOperatorForcesThemOff() throws Exception {
    ClusterVolumes a = node("a", 0);
    a.register(volume("v"));
    a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    try (EtcdClient raw = new EtcdClient(EtcdOptions.of(etcd.member(1).endpoint()))) {
      var kv = raw.range(RangeRequest.newBuilder()
          .setKey(EtcdClient.bytes(CatalogKeys.of(prefix).claimKey(PLUGIN, "v", "a", "x"))).build()).getKvs(0);
      assertEquals(0, kv.getLease(), "a claim is on no lease");
    }
    VolumeStateException inUse = assertThrows(VolumeStateException.class, () -> a.deregister(PLUGIN, "v"));
    assertTrue(inUse.getMessage().contains("still in use"), inUse.getMessage());
    ClusterVolumes operator = node("operator", 2);
    assertEquals(1, operator.forceDetach("a", Optional.empty(), Optional.empty()).size());
    assertEquals(List.of(), operator.claims(PLUGIN, "v"));
    assertTrue(operator.deregister(PLUGIN, "v"));
    assertEquals(Optional.empty(), operator.volume(PLUGIN, "v"));
  }

  @Test
  void registerTwice_isIdempotent_andOtherContentIsRefused() throws Exception {
    ClusterVolumes a = node("a", 0);
    assertTrue(a.register(volume("v")));
    assertFalse(a.register(volume("v")));
    VolumeStateException e = assertThrows(VolumeStateException.class,
        () -> a.register(volume("v", VolumeAccessMode.MULTI_NODE_MULTI_WRITER)));
    assertTrue(e.getMessage().contains("registered already"), e.getMessage());
  }

  @Test
  void election_oneLeaderPerPlugin_andADeposedLeaderWritesNothing() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    a.register(volume("v"));
    ClusterVolumes.Leadership la = a.lead(PLUGIN).orElseThrow();
    assertEquals(Optional.of(la), a.lead(PLUGIN), "kept while held");
    assertEquals(Optional.empty(), b.lead(PLUGIN), "one leader per plugin id");
    assertEquals(Map.of(PLUGIN, "a"), b.read().controllers());
    ClusterAttachment att = new ClusterAttachment(PLUGIN, "v", "b", "csi-b", ClusterAttachment.State.ATTACHING,
        Map.of(), "", "a", java.time.Instant.now());
    assertEquals(Optional.empty(), a.intendAttach(la, att), "no intent while the node has no claim");
    b.claim(request("b", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    ClusterAttachment intent = a.intendAttach(la, att).orElseThrow();
    assertEquals(Optional.empty(), a.intendAttach(la, att), "one intent");
    ClusterAttachment attached = a.updateAttachment(la, intent, intent.next(ClusterAttachment.State.ATTACHED,
        Map.of("device", "/dev/x"), "", "a", java.time.Instant.now(), Optional.empty())).orElseThrow();
    assertEquals(Optional.empty(), a.updateAttachment(la, intent, intent), "not over a changed attachment");
    assertEquals(Optional.empty(), a.markDetaching(la, attached), "not while the node claims the volume");
    assertEquals(ClusterAttachment.State.ATTACHED, b.attachment(PLUGIN, "v", "b").orElseThrow().state());
    assertEquals(attached.revision(), b.attachment(PLUGIN, "v", "b").orElseThrow().revision());

    a.close(); // the lease is revoked: b takes over
    ClusterVolumes.Leadership lb = b.lead(PLUGIN).orElseThrow();
    ClusterVolumes a2 = node("a", 0);
    assertEquals(Duration.ZERO, a2.leadershipLeft(la), "a deposed leader is sure of nothing");
    assertTrue(b.leadershipLeft(lb).compareTo(Duration.ZERO) > 0);
    assertEquals(Optional.empty(), a2.updateAttachment(la, attached, attached), "a deposed leader's write is refused");
    assertFalse(a2.deleteAttachment(la, attached));
    assertEquals(1, b.claims(PLUGIN, "v").size());
    assertTrue(b.release(PLUGIN, "v", "b", "x"));
    ClusterAttachment detaching = b.markDetaching(lb, attached).orElseThrow();
    assertEquals(ClusterAttachment.State.DETACHING, b.attachment(PLUGIN, "v", "b").orElseThrow().state());
    assertFalse(b.deleteAttachment(lb, attached), "only the attachment as read");
    assertTrue(b.deleteAttachment(lb, detaching));
    assertEquals(Optional.empty(), b.attachment(PLUGIN, "v", "b"));
  }

  @Test
  void release_isOfTheClaimAsTaken_aClaimTakenAgainMeanwhileStays() throws Exception {
    ClusterVolumes a = node("a", 0);
    a.register(volume("v"));
    ClusterClaim first = a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    ClusterClaim again = a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    assertFalse(a.release(first), "the release of the first claim is late: the allocation took it again since");
    assertEquals(1, a.claims(PLUGIN, "v").size());
    assertEquals(again.revision(), a.claimsOfNode("a").get(0).revision());
    assertTrue(a.release(again));
    assertEquals(List.of(), a.claims(PLUGIN, "v"));
  }

  @Test
  void fence_onlyWhileTheNodeIsLost_andNoClaimCameSinceItsSnapshot() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    a.register(volume("v"));
    ClusterVolumes.Leadership la = a.lead(PLUGIN).orElseThrow();
    b.claim(request("b", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
    ClusterAttachment intent = a.intendAttach(la, new ClusterAttachment(PLUGIN, "v", "b", "csi-b",
        ClusterAttachment.State.ATTACHING, Map.of(), "", "a", java.time.Instant.now())).orElseThrow();
    // b has no node key in this test (no publisher): lost. A clean stop marker makes it not lost.
    b.markStopped();
    VolumesSnapshot stopped = a.read();
    assertFalse(stopped.lost("b"), "stopped cleanly: not lost");
    assertEquals(Optional.empty(), a.beginFence(la, intent), "a node stopped cleanly is never fenced");
    b.clearStopped(); // no node key: the marker stays (the node would be lost in between)
    assertFalse(a.read().lost("b"));
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.member(2).endpoint()))) {
      side.txn(dev.csisupervisor.catalog.etcdpb.TxnRequest.newBuilder()
          .addSuccess(EtcdOps.delete(CatalogKeys.of(prefix).stoppedKey("b"))).build()); // as if b started and died
    }
    VolumesSnapshot s = a.read();
    assertTrue(s.lost("b"));
    ClusterAttachment fencing = a.beginFence(la, intent).orElseThrow();
    assertEquals(ClusterAttachment.State.DETACHING, fencing.state());
    // A claim taken after the snapshot the fence decided on: nothing is deleted.
    b.claim(request("b", "y", "v", VolumeAccessMode.SINGLE_NODE_WRITER, true)); // a reader beside its writer
    assertFalse(a.completeFence(la, PLUGIN, "v", "b", Optional.of(fencing), s.revision()));
    assertEquals(2, a.claims(PLUGIN, "v").size());
    assertTrue(a.completeFence(la, PLUGIN, "v", "b", Optional.of(fencing), a.read().revision()));
    assertEquals(List.of(), a.claims(PLUGIN, "v"));
    assertEquals(Optional.empty(), a.attachment(PLUGIN, "v", "b"));
  }

  @Test
  void anUnreadableClaim_holdsTheVolume_isNamedBy_claimAndRead_andTheForceRemovesIt() throws Exception {
    ClusterVolumes a = node("a", 0);
    ClusterVolumes b = node("b", 1);
    a.register(volume("v"));
    CatalogKeys keys = CatalogKeys.of(prefix);
    String newer = keys.claimKey(PLUGIN, "v", "b", "x");
    String disagreeing = keys.claimKey(PLUGIN, "v", "b", "y");
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.member(2).endpoint()))) {
      side.txn(dev.csisupervisor.catalog.etcdpb.TxnRequest.newBuilder()
          // A value a newer version wrote (a mode this one does not know), and a value naming another alloc.
          .addSuccess(EtcdOps.put(newer, EtcdClient.bytes("{\"format\":1,\"plugin\":\"" + PLUGIN + "\",\"volume\":"
              + "\"v\",\"node\":\"b\",\"alloc\":\"x\",\"mode\":\"SINGLE_NODE_QUANTUM_WRITER\",\"readOnly\":false,"
              + "\"since\":\"2026-11-27T00:00:00Z\"}"), 0))
          .addSuccess(EtcdOps.put(disagreeing, VolumeCodec.encode(new ClusterClaim(PLUGIN, "v", "b", "z",
              VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-b", java.time.Instant.now())), 0))
          // listed in the volume's claim guard, as the agent that wrote them does
          .addSuccess(EtcdOps.put(keys.claimGuardKey(PLUGIN, "v"), EtcdClient.bytes(
              newer.substring(keys.claimsRoot().length()) + "\n" + disagreeing.substring(keys.claimsRoot().length())), 0))
          .build());
    }
    ClaimRefusedException refused = assertThrows(ClaimRefusedException.class,
        () -> a.claim(request("a", "w", "v", VolumeAccessMode.MULTI_NODE_READER_ONLY, true)));
    assertEquals(ClaimRefusedException.Reason.UNREADABLE_CLAIM, refused.reason());
    assertTrue(refused.getMessage().contains("/claims/b/" + PLUGIN + "/v/") && refused.getMessage().contains(
        "detach --node b --force"), refused.getMessage());
    VolumesSnapshot s = a.read();
    assertEquals(java.util.Set.of(newer, disagreeing),
        s.damaged().stream().map(VolumesSnapshot.DamagedKey::key).collect(java.util.stream.Collectors.toSet()));
    assertTrue(s.unreadableClaim(PLUGIN, "v", "b"), "an unreadable claim holds the volume on its node");
    assertTrue(s.damaged().stream().anyMatch(d -> d.why().contains("not what its key says")), s.damaged().toString());
    assertEquals(List.of(), b.claimsOfNode("b"), "the node's own sweep never releases what it cannot read");

    a.forceDetach("b", Optional.empty(), Optional.empty());
    assertEquals(List.of(), a.read().damaged());
    a.claim(request("a", "w", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
  }

  @Test
  void controllerPublishes_isRemembered_whileNoControllerIsInTheCatalog() throws Exception {
    ClusterVolumes a = node("a", 0);
    assertFalse(a.controllerPublishes(PLUGIN), "nothing known: no controller publish awaited");
    ClusterVolumes.Leadership la = a.lead(PLUGIN).orElseThrow();
    a.rememberCapabilities(la, java.util.Set.of("PUBLISH_UNPUBLISH_VOLUME", "CREATE_DELETE_VOLUME"));
    a.close(); // the controller agent stops: its catalog entries and its election go
    ClusterVolumes b = node("b", 1);
    assertTrue(b.controllerPublishes(PLUGIN), "remembered: a mount waits for its attachment");
  }

  @Test
  void oneMemberPaused_claimsGoOnThroughTheOthers() throws Exception {
    ClusterVolumes a = node("a", 0); // first on member 0
    a.register(volume("v"));
    etcd.pause(etcd.member(0));
    try {
      a.claim(request("a", "x", "v", VolumeAccessMode.SINGLE_NODE_WRITER, false));
      assertEquals(1, a.claims(PLUGIN, "v").size());
    } finally {
      etcd.resume(etcd.member(0));
    }
  }

  @Test
  void badInput_namesTheField() {
    assertMessage("pluginId", () -> new ClaimRequest("bad plugin", "v", "n", "a", VolumeAccessMode.SINGLE_NODE_WRITER,
        false, "", Map.of()));
    assertMessage("volumeId must not be empty", () -> new ClaimRequest(PLUGIN, "", "n", "a",
        VolumeAccessMode.SINGLE_NODE_WRITER, false, "", Map.of()));
    assertMessage("volumeId must be at most 128 bytes", () -> new ClaimRequest(PLUGIN, "v".repeat(129), "n", "a",
        VolumeAccessMode.SINGLE_NODE_WRITER, false, "", Map.of()));
    assertMessage("nodeId", () -> new ClaimRequest(PLUGIN, "v", "a/b", "a", VolumeAccessMode.SINGLE_NODE_WRITER,
        false, "", Map.of()));
    assertMessage("allocId must not contain '/'", () -> new ClaimRequest(PLUGIN, "v", "n", "a/b",
        VolumeAccessMode.SINGLE_NODE_WRITER, false, "", Map.of()));
    assertMessage("readOnly must be true", () -> new ClaimRequest(PLUGIN, "v", "n", "a",
        VolumeAccessMode.MULTI_NODE_READER_ONLY, false, "", Map.of()));
    assertMessage("nodeTopology", () -> new ClaimRequest(PLUGIN, "v", "n", "a", VolumeAccessMode.SINGLE_NODE_WRITER,
        false, "", Collections.singletonMap("zone", null)));
    assertMessage("accessibleTopology[1]", () -> new ClusterVolume(PLUGIN, "v", 0, Set.of(),
        List.of(Map.of("zone", "z"), Map.of()), Map.of(), Map.of()));
    assertMessage("capacityBytes", () -> new ClusterVolume(PLUGIN, "v", -1, Set.of(), List.of(), Map.of(), Map.of()));
    assertMessage("mode must be one of", () -> VolumeAccessMode.parse("mode", "SOMETIMES_WRITER"));
    assertMessage("leaseTtl", () -> ClusterVolumes.builder().leaseTtl(Duration.ofMillis(500)));
  }

  // ---- create and delete requests ----

  private static Spec spec(long bytes) {
    return new Spec(bytes, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of("type", "ssd"),
        List.of(), List.of());
  }

  private static ClusterVolumeRequest create(String name, long bytes) {
    return ClusterVolumeRequest.create(PLUGIN, name, spec(bytes), Optional.empty(), NOW);
  }

  private static ClusterVolume made(String id) {
    return new ClusterVolume(PLUGIN, id, 1 << 20, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(),
        Map.of("type", "ssd"), Map.of("ctx", "1"));
  }

  @Test
  void create_isIdempotentByName_andRefusesOtherContentUnlessFailed() throws Exception {
    ClusterVolumes cli = node("cli", 0);
    ClusterVolumeRequest first = cli.requestCreate(create("web-data", 1 << 20));
    assertEquals(State.PENDING, first.state());
    assertTrue(first.revision() > 0);
    assertEquals(first.revision(), cli.requestCreate(create("web-data", 1 << 20)).revision(), "asked again: as stored");
    VolumeStateException other = assertThrows(VolumeStateException.class,
        () -> cli.requestCreate(create("web-data", 2 << 20)));
    assertTrue(other.getMessage().contains("create of disk.csi/web-data is pending with other content"),
        other.getMessage());

    // The controller agent fails it: then it may be asked again, with anything.
    ClusterVolumes controller = node("n1", 1);
    ClusterVolumes.Leadership l = controller.lead(PLUGIN).orElseThrow();
    ClusterVolumeRequest stored = controller.request(Kind.CREATE, PLUGIN, "web-data").orElseThrow();
    ClusterVolumeRequest sent = controller.updateRequest(l, stored, stored.sending("n1", NOW)).orElseThrow();
    assertEquals(1, sent.attempts());
    assertTrue(controller.updateRequest(l, sent, sent.failed("CreateVolume: OUT_OF_RANGE: too big")).isPresent());
    ClusterVolumeRequest again = cli.requestCreate(create("web-data", 2 << 20));
    assertEquals(State.PENDING, again.state());
    assertEquals(2 << 20, cli.request(Kind.CREATE, PLUGIN, "web-data").orElseThrow().spec().requiredBytes());
  }

  @Test
  void onlyTheElectedControllerAgent_writesTheOutcome_withTheVolumeInOneTransaction() throws Exception {
    ClusterVolumes cli = node("cli", 0);
    ClusterVolumes n1 = node("n1", 1);
    ClusterVolumes n2 = node("n2", 2);
    cli.requestCreate(create("web-data", 1 << 20));
    ClusterVolumes.Leadership l1 = n1.lead(PLUGIN).orElseThrow();
    assertTrue(n2.lead(PLUGIN).isEmpty(), "one controller agent per plugin id");
    ClusterVolumeRequest r = n1.read().requests().get(0);
    ClusterVolumeRequest sent = n1.updateRequest(l1, r, r.sending("n1", NOW)).orElseThrow();
    assertTrue(n1.read().openRequests(PLUGIN).get(0).attemptStarted().isPresent(), "in flight, for status");

    // A stale view of the request (written since) is not overwritten.
    assertTrue(n1.updateRequest(l1, r, r.failed("stale")).isEmpty());
    // A deposed leader writes nothing: n1 resigns, n2 leads; n1's outcome is refused, n2 sends it again.
    n1.resign(l1);
    ClusterVolumes.Leadership l2 = n2.lead(PLUGIN).orElseThrow();
    assertFalse(n1.completeCreate(l1, sent, made("vol-1")));
    assertTrue(n1.volume(PLUGIN, "vol-1").isEmpty());
    ClusterVolumeRequest resent = n2.updateRequest(l2, sent, sent.sending("n2", NOW)).orElseThrow();
    assertEquals(2, resent.attempts());
    assertTrue(n2.completeCreate(l2, resent, made("vol-1")));

    VolumesSnapshot s = cli.read();
    assertEquals(List.of(made("vol-1")), s.volumes());
    ClusterVolumeRequest done = s.requests().get(0);
    assertEquals(State.DONE, done.state());
    assertEquals("vol-1", done.volumeId());
    assertTrue(s.openRequests(PLUGIN).isEmpty());
    assertEquals(Optional.of(done), s.createOf(PLUGIN, "vol-1"));
    // Asked again: done already, answered as it stands.
    assertEquals(State.DONE, cli.requestCreate(create("web-data", 1 << 20)).state());
  }

  @Test
  void delete_refusedWhileClaimed_namingTheHolder_thenRefusesClaims_andGoesWithItsVolume() throws Exception {
    ClusterVolumes cli = node("cli", 0);
    ClusterVolumes n1 = node("n1", 1);
    ClusterVolumes.Leadership l = n1.lead(PLUGIN).orElseThrow();
    cli.requestCreate(create("web-data", 1 << 20));
    ClusterVolumeRequest c = n1.read().requests().get(0);
    assertTrue(n1.completeCreate(l, n1.updateRequest(l, c, c.sending("n1", NOW)).orElseThrow(), made("vol-1")));

    n1.claim(new ClaimRequest(PLUGIN, "vol-1", "n2", "web-1", VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-n2",
        Map.of()));
    VolumeStateException inUse = assertThrows(VolumeStateException.class,
        () -> cli.requestDelete(ClusterVolumeRequest.delete(PLUGIN, "vol-1", Optional.empty(), NOW)));
    assertTrue(inUse.getMessage().contains("claim by node n2, alloc web-1"), inUse.getMessage());
    assertTrue(cli.request(Kind.DELETE, PLUGIN, "vol-1").isEmpty(), "nothing asked");

    assertTrue(n1.release(PLUGIN, "vol-1", "n2", "web-1"));
    ClusterVolumeRequest d = cli.requestDelete(ClusterVolumeRequest.delete(PLUGIN, "vol-1", Optional.empty(), NOW))
        .orElseThrow();
    assertEquals(State.PENDING, d.state());
    ClaimRefusedException refused = assertThrows(ClaimRefusedException.class, () -> n1.claim(new ClaimRequest(PLUGIN,
        "vol-1", "n3", "web-2", VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-n3", Map.of())));
    assertEquals(ClaimRefusedException.Reason.BEING_DELETED, refused.reason());
    assertTrue(cli.requestDelete(ClusterVolumeRequest.delete(PLUGIN, "nope", Optional.empty(), NOW)).isEmpty(),
        "an unregistered volume: nothing to delete");

    ClusterVolumeRequest sent = n1.updateRequest(l, d, d.sending("n1", NOW)).orElseThrow();
    assertTrue(n1.completeDelete(l, sent));
    VolumesSnapshot s = cli.read();
    assertTrue(s.volumes().isEmpty() && s.requests().isEmpty(), "volume, delete and the create that made it: " + s);
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.member(0).endpoint()))) {
      assertEquals(0, side.range(dev.csisupervisor.catalog.etcdpb.RangeRequest.newBuilder()
          .setKey(EtcdClient.bytes(CatalogKeys.of(prefix).claimGuardKey(PLUGIN, "vol-1"))).build()).getKvsCount(),
          "its claim guard goes with it");
    }
  }

  @Test
  void withdraw_removesPendingOrFailed_neverDone() throws Exception {
    ClusterVolumes cli = node("cli", 0);
    cli.requestCreate(create("a", 1 << 20));
    assertTrue(cli.withdraw(Kind.CREATE, PLUGIN, "a"));
    assertFalse(cli.withdraw(Kind.CREATE, PLUGIN, "a"));
    assertTrue(cli.request(Kind.CREATE, PLUGIN, "a").isEmpty());
  }

  @Test
  void requestBadInput_isNamedFieldByField() {
    assertMessage("name must not be empty", () -> create("", 1));
    assertMessage("requiredBytes must not be negative", () -> create("a", -1));
    assertMessage("requiredBytes must not be more than limitBytes", () -> new Spec(10, 5,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of()));
    assertMessage("accessModes must not be empty for a create", () -> ClusterVolumeRequest.create(PLUGIN, "a",
        new Spec(0, 0, Set.of(), false, "", Map.of(), List.of(), List.of()), Optional.empty(), NOW));
    assertMessage("accessModes must be one of", () -> VolumeAccessMode.parse("accessModes", "everyone-writes"));
    assertMessage("pluginId", () -> ClusterVolumeRequest.create("bad/plugin", "a", spec(1), Optional.empty(), NOW));
    assertMessage("secretsFile must be an absolute path", () -> ClusterVolumeRequest.create(PLUGIN, "a", spec(1),
        Optional.of(Path.of("relative/secrets")), NOW));
    assertMessage("fsType must be empty for a block volume", () -> new Spec(0, 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), true, "ext4", Map.of(), List.of(), List.of()));
    assertMessage("preferred topology", () -> new Spec(0, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "",
        Map.of(), List.of(Map.of("zone", "a")), List.of(Map.of("zone", "b"))));
  }

  @Test
  void codec_roundTrips_everyField() {
    ClusterVolumeRequest r = ClusterVolumeRequest.create(PLUGIN, "projects/p/disks/d", new Spec(1, 2,
            Set.of(VolumeAccessMode.MULTI_NODE_READER_ONLY, VolumeAccessMode.SINGLE_NODE_WRITER), false, "xfs",
            Map.of("k", "v"), List.of(Map.of("zone", "a"), Map.of("zone", "b")), List.of(Map.of("zone", "b"))),
        Optional.of(Path.of("/etc/csi/secrets")), NOW).sending("n1", NOW).retryAt(NOW.plusSeconds(2), "UNAVAILABLE");
    assertEquals(r.withRevision(7), VolumeCodec.decodeRequest(VolumeCodec.encode(r), 7));
    ClusterVolumeRequest done = r.done("vol-9");
    assertEquals(done, VolumeCodec.decodeRequest(VolumeCodec.encode(done), 0));
  }

  private static void assertMessage(String part, org.junit.jupiter.api.function.Executable e) {
    Throwable t = assertThrows(IllegalArgumentException.class, e);
    assertTrue(t.getMessage().contains(part), "expected '" + part + "' in: " + t.getMessage());
  }
}
