package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.Plugins.plugin;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.catalog.testing.EtcdCluster.Member;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog on a real three-member etcd cluster (issue 21): three publishers with real registries, each
 * first connected to a different member, and a view, while members die, stop answering, lose their quorum or
 * are replaced. After every fault, once the cluster is healthy, the view must equal the registries exactly:
 * every live node's keys, nothing else, each key on its node's current lease; and while one member of three is
 * down no live node's key may vanish (a keep-alive sent to a member that cannot answer must not cost a lease).
 * Convergence times are printed as {@code CLUSTER <case> ...-ms N}.
 */
class EtcdClusterFailoverTest {
  private static final Duration TTL = Duration.ofSeconds(4);
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(1);
  /** Less than the TCP and gRPC keep-alives' 15 s and more: a client that waits for them fails the test. */
  private static final Duration BELOW_TRANSPORT_KEEPALIVE = Duration.ofSeconds(12);
  private static final Duration CONVERGE = Duration.ofSeconds(20);
  private static final String PREFIX = "/csi";

  @TempDir(cleanup = CleanupMode.ON_SUCCESS) // a failure keeps the members' etcd.log files
  Path tmp;

  private EtcdCluster etcd;
  private final List<Node> nodes = new ArrayList<>();
  private EtcdClusterView view;
  private final List<AutoCloseable> closeables = new ArrayList<>();
  /** Keys the test deregistered on purpose; any other removal the view reports is a lost live key. */
  private final Set<String> deregistered = ConcurrentHashMap.newKeySet();
  private final List<ClusterEvent> unexpectedRemovals = java.util.Collections.synchronizedList(new ArrayList<>());

  /** One simulated agent: a registry and its publisher. */
  private record Node(String id, PluginRegistry registry, CatalogPublisher publisher) {}

  @BeforeEach
  void startCluster() throws Exception {
    etcd = EtcdCluster.start(tmp, 3);
  }

  @AfterEach
  void stopAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    if (etcd != null) {
      etcd.close();
    }
  }

  /** The endpoints with {@code first}'s first: the client connects there and fails over in order. */
  private static EtcdOptions options(List<Member> members, Member first) {
    List<String> order = new ArrayList<>();
    int i = members.indexOf(first);
    for (int k = 0; k < members.size(); k++) {
      order.add(members.get((i + k) % members.size()).endpoint());
    }
    return EtcdOptions.of(String.join(",", order)).withRequestTimeout(REQUEST_TIMEOUT);
  }

  /** Three nodes, node i first connected to member i, and a view first connected to {@code viewFirst}. */
  private void startClients(List<Member> endpoints, Member viewFirst) throws InterruptedException {
    String[] specs = {"node:ebs,controller:ebs,node:nfs", "node:ebs,node:nfs", "node:ebs,controller:ebs"};
    for (int i = 0; i < 3; i++) {
      String id = "n" + (i + 1);
      PluginRegistry r = Plugins.registry();
      closeables.add(r);
      Plugins.registerAll(r, id, specs[i]);
      CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(options(endpoints, endpoints.get(i))).prefix(PREFIX)
          .nodeId(id).leaseTtl(TTL).backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build();
      closeables.add(p);
      p.start();
      nodes.add(new Node(id, r, p));
    }
    view = (EtcdClusterView) ClusterView.builder().etcd(options(endpoints, viewFirst)).prefix(PREFIX)
        .backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build();
    closeables.add(view);
    view.start();
    assertTrue(view.awaitSynced(Duration.ofSeconds(10)), "view synced");
    closeables.add(view.subscribe(e -> {
      if (e.kind() == ClusterEvent.Kind.PLUGIN_REMOVED && !deregistered.contains(key(e.plugin()))
          || e.kind() == ClusterEvent.Kind.NODE_REMOVED) {
        unexpectedRemovals.add(e);
      }
    }, Runnable::run));
    awaitConverged("start", System.nanoTime());
  }

  private static String key(CatalogEntry e) {
    return e.nodeId() + "/" + e.type().id() + "/" + e.name() + "/" + e.allocId();
  }

  /** What the view must show: every registration of every node, as its publisher encodes it. */
  private Map<String, CatalogEntry> expected() {
    Map<String, CatalogEntry> m = new HashMap<>();
    for (Node n : nodes) {
      for (PluginType t : PluginType.values()) {
        for (PluginInfo p : n.registry().listAll(t)) {
          CatalogEntry e = CatalogEntry.of(n.id(), p);
          m.put(key(e), e);
        }
      }
    }
    return m;
  }

  private static Map<String, CatalogEntry> byKey(List<CatalogEntry> entries) {
    return entries.stream().collect(Collectors.toMap(EtcdClusterFailoverTest::key, e -> e, (a, b) -> {
      throw new AssertionError("duplicate " + key(a));
    }));
  }

  /**
   * Null when the view, etcd itself (read on a healthy member) and the registries agree exactly and every
   * key is on its node's current lease; otherwise what differs.
   */
  private String difference() {
    Map<String, CatalogEntry> want = expected();
    ClusterSnapshot s = view.snapshot();
    if (s.entries().size() != want.size() || !byKey(s.entries()).equals(want)) {
      return "view " + new TreeSet<>(byKey(s.entries()).keySet()) + " != registries " + new TreeSet<>(want.keySet());
    }
    Set<String> ids = nodes.stream().map(Node::id).collect(Collectors.toSet());
    if (!s.nodes().keySet().equals(ids)) {
      return "view nodes " + s.nodes().keySet();
    }
    for (Node n : nodes) {
      PublisherStatus st = n.publisher().status();
      if (!st.connected() || st.backlog() != 0) {
        return n.id() + " not in sync: " + st;
      }
    }
    Member healthy = etcd.members().stream().filter(Member::answering).findFirst().orElseThrow();
    try (EtcdClient c = new EtcdClient(EtcdOptions.of(healthy.endpoint()).withRequestTimeout(REQUEST_TIMEOUT))) {
      ClusterSnapshot truth = ClusterView.read(c.options(), PREFIX);
      if (!byKey(truth.entries()).equals(want) || !truth.nodes().keySet().equals(ids)) {
        return "etcd " + new TreeSet<>(byKey(truth.entries()).keySet()) + " != registries";
      }
      // Every key on its node's current lease: a key left on an old lease would vanish later.
      Map<String, Long> leases = nodes.stream().collect(Collectors.toMap(Node::id, n -> n.publisher().status().leaseId()));
      CatalogKeys keys = CatalogKeys.of(PREFIX);
      var root = EtcdClient.bytes(keys.root());
      for (KeyValue kv : c.range(RangeRequest.newBuilder().setKey(root).setRangeEnd(EtcdClient.prefixEnd(root)).build())
          .getKvsList()) {
        String k = kv.getKey().toStringUtf8();
        String node = keys.parsePluginKey(k).map(pk -> pk.nodeId()).or(() -> keys.parseNodeKey(k)).orElseThrow();
        if (kv.getLease() != leases.get(node)) {
          return k + " is on lease " + Long.toHexString(kv.getLease()) + ", its node's is " + Long.toHexString(leases.get(node));
        }
      }
    } catch (EtcdException e) {
      return "etcd read failed: " + e.getMessage();
    }
    return null;
  }

  /** Waits until {@link #difference()} is null; prints and returns the time since {@code sinceNanos}. */
  private long awaitConverged(String what, long sinceNanos) {
    String[] last = new String[1];
    try {
      await().atMost(CONVERGE).pollInterval(Duration.ofMillis(50)).until(() -> (last[0] = difference()) == null);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw new AssertionError("not converged after " + what + ": " + last[0] + "; etcd members " + etcd.members()
          + " (their logs under " + tmp + ", kept after a failure); publishers "
          + nodes.stream().map(n -> n.id() + "=" + n.publisher().status()).toList() + "; view " + view.freshness(), e);
    }
    long ms = (System.nanoTime() - sinceNanos) / 1_000_000;
    System.out.println("CLUSTER " + what + "-converge-ms " + ms);
    return ms;
  }

  /** A change on every node while the cluster is disturbed: one added, one removed or updated, one health flip. */
  private void changeRegistries(String tag) {
    for (Node n : nodes) {
      n.registry().register(plugin(PluginType.CSI_NODE, "p-" + tag, n.id() + "-p-" + tag, true));
    }
    Node n1 = nodes.get(0);
    n1.registry().listAll(PluginType.CSI_NODE).stream().filter(p -> p.name().equals("nfs")).findFirst().ifPresent(p -> {
      deregistered.add(key(CatalogEntry.of(n1.id(), p)));
      n1.registry().deregister(PluginType.CSI_NODE, "nfs", p.allocId());
    });
    Node n2 = nodes.get(1);
    PluginInfo ebs = n2.registry().pluginForAlloc(PluginType.CSI_NODE, "ebs", n2.id() + "-ebs").orElseThrow();
    n2.registry().register(ebs.withHealth(ebs.health().healthy()
        ? PluginHealth.unhealthy("probe failed during " + tag, Instant.now())
        : PluginHealth.healthy(Instant.now())));
    nodes.get(2).registry().register(plugin(PluginType.CSI_CONTROLLER, "ebs", nodes.get(2).id() + "-ebs", true)
        .withVersion("2.0-" + tag));
  }

  private Map<String, Long> leases() {
    return nodes.stream().collect(Collectors.toMap(Node::id, n -> n.publisher().status().leaseId()));
  }

  private void assertNoLiveKeyLost(Map<String, Long> leasesBefore) {
    assertEquals(List.of(), unexpectedRemovals, "a live node's key vanished");
    assertEquals(leasesBefore, leases(), "no lease was lost while a quorum was up");
  }

  @Test
  void leaderKilled_clientsMoveOn_viewConvergesWithoutLosingALiveKey() throws Exception {
    Member leader = etcd.leader().orElseThrow();
    startClients(etcd.members(), leader); // the view and one node start on the leader
    Map<String, Long> leases = leases();

    long t0 = System.nanoTime();
    etcd.kill(leader);
    changeRegistries("kill");
    awaitConverged("leader-kill9", t0);
    assertNoLiveKeyLost(leases);
    assertNotEquals(leader.endpoint(), view.freshness().endpoint(), "the view moved off the dead leader");
    // A one-time read (the CLI's) whose first endpoint is the dead member reads from the next.
    ClusterRead once = ClusterView.readAllowingStale(options(etcd.members(), leader), PREFIX);
    assertFalse(once.freshness().stale(), once.freshness().toString());
    assertEquals(expected(), byKey(once.snapshot().entries()));

    etcd.restart(leader);
    changeRegistries("back");
    awaitConverged("leader-back", System.nanoTime());
    assertNoLiveKeyLost(leases);
  }

  @Test
  void memberStopped_answersNothing_clientsMoveOffWithinTheirRequestTimeout() throws Exception {
    Member leader = etcd.leader().orElseThrow();
    Member silent = etcd.members().stream().filter(m -> m != leader).findFirst().orElseThrow();
    int silentIndex = etcd.members().indexOf(silent);
    startClients(etcd.members(), silent); // the view and node silentIndex+1 on the member about to stop
    Map<String, Long> leases = leases();
    CatalogPublisher onSilent = nodes.get(silentIndex).publisher();
    assertEquals(silent.endpoint(), onSilent.status().endpoint());

    long t0 = System.nanoTime();
    etcd.pause(silent); // SIGSTOP: its connections stay open, nothing answers
    // Nothing changes locally: only the keep-alives and the view's watch meet the silence, and must notice it
    // once a ping or a progress request has waited a request timeout (the next ping is up to TTL/3 away), not
    // when a lease runs out, nor after TCP or gRPC keep-alive give up (15 s and more). The bounds are below those
    // 15 s, not the expected figure (about TTL/3 plus a request timeout; printed): a loaded machine may be slower.
    // A lease that ran out would show as a key lost below.
    await().atMost(BELOW_TRANSPORT_KEEPALIVE).pollInterval(Duration.ofMillis(20))
        .until(() -> !onSilent.status().endpoint().equals(silent.endpoint()) && onSilent.status().connected());
    System.out.println("CLUSTER sigstop-publisher-moved-ms " + (System.nanoTime() - t0) / 1_000_000);
    await().atMost(BELOW_TRANSPORT_KEEPALIVE).pollInterval(Duration.ofMillis(20))
        .until(() -> !view.freshness().endpoint().equals(silent.endpoint()) && !view.freshness().stale());
    System.out.println("CLUSTER sigstop-view-moved-ms " + (System.nanoTime() - t0) / 1_000_000);
    // Past a lease TTL with one member silent (a lease kept alive only through it would be gone): none lost.
    long until = t0 + TTL.plusSeconds(1).toNanos();
    await().atMost(TTL.multipliedBy(3)).until(() -> System.nanoTime() > until && difference() == null);
    assertNoLiveKeyLost(leases);
    long t1 = System.nanoTime();
    changeRegistries("stop");
    awaitConverged("sigstop", t1);
    assertNoLiveKeyLost(leases);

    etcd.resume(silent);
    changeRegistries("cont");
    awaitConverged("sigcont", System.nanoTime());
    assertNoLiveKeyLost(leases);
  }

  @Test
  void quorumLost_registrationsGoOnLocally_viewSaysStaleSinceWhen_thenConverges() throws Exception {
    startClients(etcd.members(), etcd.member(2));
    Member survivor = etcd.member(2);
    long revisionBefore = view.freshness().revision();
    Instant lastFresh = Instant.now();

    etcd.stop(etcd.member(0));
    etcd.stop(etcd.member(1));
    // Local registrations do not wait for etcd: it stays without quorum until after this returns (a registration
    // that waited for it would never return, and the test's timeout would fail it).
    long t0 = System.nanoTime();
    changeRegistries("noquorum");
    await().atMost(Duration.ofSeconds(10)).until(() -> nodes.stream().allMatch(n -> !n.publisher().status().connected()
        && !n.publisher().status().lastError().isEmpty()));
    await().atMost(Duration.ofSeconds(10)).until(() -> view.freshness().stale());
    ViewFreshness f = view.freshness();
    System.out.println("CLUSTER noquorum-view-stale-after-ms " + (System.nanoTime() - t0) / 1_000_000 + " " + f);
    assertTrue(f.staleSince() != null && !f.staleSince().isBefore(lastFresh.minusSeconds(1))
        && !f.staleSince().isAfter(Instant.now()), f.toString());
    assertTrue(f.revision() >= revisionBefore, f.toString());
    assertFalse(f.lastError().isEmpty(), f.toString());
    Map<String, CatalogEntry> before = byKey(view.snapshot().entries());
    // A one-time read: no member can answer with the quorum; the survivor's own copy, marked stale.
    EtcdOptions all = options(etcd.members(), etcd.member(0));
    EtcdException refused = org.junit.jupiter.api.Assertions.assertThrows(EtcdException.class,
        () -> ClusterView.read(all, PREFIX));
    assertTrue(refused.getMessage().contains(etcd.member(0).endpoint().replace("http://", "")), refused.getMessage());
    ClusterRead stale = ClusterView.readAllowingStale(all, PREFIX);
    assertTrue(stale.freshness().stale() && stale.freshness().endpoint().equals(survivor.endpoint()), stale.freshness().toString());
    assertEquals(before, byKey(stale.snapshot().entries()));
    // Longer than a lease since the quorum went: the publishers keep their backlog and nothing is dropped.
    long until = t0 + TTL.plusSeconds(1).toNanos();
    await().atMost(TTL.plusSeconds(5)).until(() -> System.nanoTime() > until);
    changeRegistries("still");
    assertTrue(nodes.stream().allMatch(n -> n.publisher().status().backlog() > 0), "changes wait in the backlog");

    long back = System.nanoTime();
    etcd.restart(etcd.member(0), etcd.member(1));
    System.out.println("CLUSTER noquorum-restart-ms " + (System.nanoTime() - back) / 1_000_000);
    awaitConverged("quorum-back", back);
    assertFalse(view.freshness().stale(), view.freshness().toString());
    assertEquals(List.of(), unexpectedRemovals, "nothing lost");
    assertTrue(survivor.answering());
  }

  /** A fourth node, "cut", that knows only {@code only}: when that member stops answering, so is the node cut off. */
  private Node startCutOffNode(Member only) {
    PluginRegistry r = Plugins.registry();
    closeables.add(r);
    Plugins.registerAll(r, "cut", "node:ebs,controller:ebs");
    CatalogPublisher p = CatalogPublisher.builder().registry(r).etcd(options(List.of(only), only)).prefix(PREFIX)
        .nodeId("cut").leaseTtl(TTL).backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build();
    closeables.add(p);
    p.start();
    Node cut = new Node("cut", r, p);
    nodes.add(cut);
    awaitConverged("cut-start", System.nanoTime());
    return cut;
  }

  /**
   * Pauses {@code member}, the cut-off node's only one, until that node's lease has run out (its keys vanish, as
   * a dead node's would) while the others go on; then the cut-off node registers something locally, everyone
   * else changes too, and {@code member} resumes. Returns when the view has converged again.
   */
  private void cutOffPastTheLease(Node cut, Member member, String tag) throws Exception {
    long t0 = System.nanoTime();
    etcd.pause(member);
    await().atMost(TTL.plusSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> view.snapshot().nodePlugins("cut").isEmpty() && !view.snapshot().nodes().containsKey("cut"));
    System.out.println("CLUSTER " + tag + "-cut-off-node-expired-ms " + (System.nanoTime() - t0) / 1_000_000);
    cut.registry().register(plugin(PluginType.CSI_NODE, "nfs", "cut-nfs", true)); // registered locally meanwhile
    nodes.remove(cut);
    changeRegistries(tag);
    awaitConverged(tag + "-others", t0);
    nodes.add(cut);

    long back = System.nanoTime();
    etcd.resume(member);
    awaitConverged(tag + "-cut-off-node-back", back);
  }

  @Test
  void nodeCutOffWithAFollower_pastItsLease_keysExpire_thenANewLeaseAndEveryKeyPutAgain() throws Exception {
    Member leader = etcd.leader().orElseThrow();
    Member follower = etcd.members().stream().filter(m -> m != leader).findFirst().orElseThrow();
    startClients(etcd.members(), leader);
    Node cut = startCutOffNode(follower);
    Map<String, Long> leases = leases();

    cutOffPastTheLease(cut, follower, "follower");
    assertEquals(List.of(), unexpectedRemovals.stream().filter(e -> !e.nodeId().equals("cut")).toList(),
        "only the cut-off node's keys vanished");
    assertNotEquals(leases.get("cut"), cut.publisher().status().leaseId(), "a new lease");
    leases.remove("cut");
    Map<String, Long> now = leases();
    now.remove("cut");
    assertEquals(leases, now, "the other nodes kept theirs");
  }

  /**
   * The same with the leader paused. etcd before 3.4.25 and 3.5.8 (Debian's 3.4.23 here) has a known bug,
   * etcd-io/etcd#15247: a leader paused longer than a TTL still believes it leads when it resumes and may revoke
   * every lease it thinks expired, live ones included, before it steps down. Whether that happens is a race
   * inside etcd; either way every node must end with all of its keys on a live lease, and a key of a node other
   * than the cut-off one may only have vanished if etcd revoked that node's lease.
   */
  @Test
  void nodeCutOffWithTheLeader_pastItsLease_everyNodeEndsWithAllItsKeys_evenWhenEtcdRevokesLiveLeases()
      throws Exception {
    Member leader = etcd.leader().orElseThrow();
    Member other = etcd.members().stream().filter(m -> m != leader).findFirst().orElseThrow();
    startClients(etcd.members(), other);
    Node cut = startCutOffNode(leader);
    Map<String, Long> leases = leases();

    cutOffPastTheLease(cut, leader, "leader");
    assertNotEquals(leases.get("cut"), cut.publisher().status().leaseId(), "a new lease");
    Map<String, Long> now = leases();
    Set<String> revoked = nodes.stream().map(Node::id).filter(id -> !now.get(id).equals(leases.get(id)))
        .collect(Collectors.toSet());
    System.out.println("CLUSTER leader-paused nodes-whose-lease-etcd-revoked " + new TreeSet<>(revoked));
    assertEquals(List.of(), unexpectedRemovals.stream().filter(e -> !revoked.contains(e.nodeId())).toList(),
        "a key vanished only with its node's lease");
  }

  @Test
  void memberRemovedAndAnotherAdded_whileClientsRun_viewConverges() throws Exception {
    Member spare = etcd.reserve(); // its endpoint is configured from the start, as a DNS name would be
    List<Member> endpoints = new ArrayList<>(etcd.members());
    endpoints.add(spare);
    Member removed = etcd.member(0);
    startClients(endpoints, removed);
    Map<String, Long> leases = leases();

    long t0 = System.nanoTime();
    etcd.remove(removed);
    changeRegistries("removed");
    awaitConverged("member-removed", t0);
    assertNotEquals(removed.endpoint(), view.freshness().endpoint());

    long added = System.nanoTime();
    etcd.add(spare);
    System.out.println("CLUSTER member-add-ms " + (System.nanoTime() - added) / 1_000_000);
    // Now the original members' quorum shrinks to the new one: stop another original.
    Member next = etcd.member(0);
    long t1 = System.nanoTime();
    etcd.kill(next);
    changeRegistries("added");
    awaitConverged("member-added-other-killed", t1);
    assertNoLiveKeyLost(leases);
    assertTrue(nodes.stream().map(n -> n.publisher().status().endpoint()).noneMatch(e -> e.equals(removed.endpoint())
        || e.equals(next.endpoint())));
  }
}
