package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.Plugins.plugin;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.PutRequest;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The catalog against a real etcd (started here on loopback, stopped by pid): several registries + publishers
 * with their own node ids, one cluster view, faults of etcd and of nodes.
 */
class ClusterCatalogTest {
  private static final Duration TTL = Duration.ofSeconds(3);
  /**
   * How long a wait on etcd's state may take before the test fails: a bound against a hang, not a figure (a wait
   * returns as soon as its condition holds; the figures are printed). Long enough for a loaded machine.
   */
  private static final Duration ETCD_WAIT = Duration.ofSeconds(30);
  private static final AtomicInteger PREFIXES = new AtomicInteger();

  @TempDir
  static Path tmp;

  static EtcdProcess etcd;

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final String prefix = "/test" + PREFIXES.incrementAndGet();

  @BeforeAll
  static void startEtcd() throws IOException {
    etcd = EtcdProcess.start(tmp);
  }

  @AfterAll
  static void stopEtcd() {
    if (etcd != null) {
      etcd.stop();
    }
  }

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  private PluginRegistry registry(String nodeId, String specs) {
    PluginRegistry r = track(Plugins.registry());
    Plugins.registerAll(r, nodeId, specs);
    return r;
  }

  private CatalogPublisher publisher(PluginRegistry r, String nodeId, String endpoint) {
    CatalogPublisher p = track(CatalogPublisher.builder().registry(r).etcd(EtcdOptions.of(endpoint)).prefix(prefix)
        .nodeId(nodeId).leaseTtl(TTL).backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build());
    p.start();
    return p;
  }

  /** A started publisher of {@code r} as {@code nodeId}, once it has published everything. */
  private CatalogPublisher publishedInSync(PluginRegistry r, String nodeId) throws InterruptedException {
    CatalogPublisher p = publisher(r, nodeId, etcd.endpoint());
    assertTrue(p.awaitInSync(Duration.ofSeconds(10)), "publisher in sync");
    return p;
  }

  private EtcdClusterView view(Duration initialBackoff) throws InterruptedException {
    EtcdClusterView v = (EtcdClusterView) track(ClusterView.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix(prefix)
        .backoff(initialBackoff, initialBackoff.multipliedBy(2)).build());
    v.start();
    assertTrue(v.awaitSynced(Duration.ofSeconds(10)), "view synced");
    return v;
  }

  private static String counts(ClusterSnapshot s, String name) {
    return s.plugin(name).map(p -> "c" + p.controllersHealthy() + "/" + p.controllersExpected() + " n" + p.nodesHealthy()
        + "/" + p.nodesExpected() + " entries=" + p.entries().size()).orElse("absent");
  }

  /** Events applied in order to a subscription's snapshot: what the subscriber believes. */
  private static final class Mirror implements ClusterListener {
    final Map<String, CatalogEntry> plugins = new HashMap<>();
    final List<ClusterEvent> events = new CopyOnWriteArrayList<>();
    private final List<ClusterEvent> early = new ArrayList<>();
    private boolean initialized;
    long lastSequence;
    volatile String error;

    static Mirror subscribe(ClusterView v, java.util.concurrent.Executor executor, List<AutoCloseable> closeables) {
      Mirror m = new Mirror();
      ClusterSubscription sub = v.subscribe(m, executor);
      closeables.add(sub);
      m.init(sub);
      return m;
    }

    private synchronized void init(ClusterSubscription sub) {
      sub.snapshot().entries().forEach(e -> plugins.put(key(e), e));
      lastSequence = sub.snapshotSequence();
      initialized = true;
      early.forEach(this::apply);
      early.clear();
    }

    static String key(CatalogEntry e) {
      return e.nodeId() + "/" + e.type() + "/" + e.name() + "/" + e.allocId();
    }

    @Override
    public synchronized void onEvent(ClusterEvent e) {
      if (!initialized) {
        early.add(e);
      } else {
        apply(e);
      }
    }

    private void apply(ClusterEvent e) {
      if (e.sequence() != lastSequence + 1) {
        error = "gap: " + lastSequence + " then " + e.sequence();
      }
      lastSequence = e.sequence();
      events.add(e);
      if (e.plugin() != null) {
        if (e.kind() == ClusterEvent.Kind.PLUGIN_REMOVED) {
          plugins.remove(key(e.plugin()));
        } else {
          plugins.put(key(e.plugin()), e.plugin());
        }
      }
    }

    synchronized Map<String, CatalogEntry> content() {
      return new HashMap<>(plugins);
    }
  }

  private static Map<String, CatalogEntry> content(ClusterSnapshot s) {
    Map<String, CatalogEntry> m = new HashMap<>();
    s.entries().forEach(e -> m.put(Mirror.key(e), e));
    return m;
  }

  @Test
  void threeNodes_viewShowsExactCounts_andAnUnhealthyPluginWhereItIs() throws Exception {
    PluginRegistry r1 = registry("n1", "node:ebs,controller:ebs,node:nfs");
    PluginRegistry r2 = registry("n2", "node:ebs,node:nfs");
    PluginRegistry r3 = registry("n3", "node:ebs");
    EtcdClusterView v = view(Duration.ofMillis(100));
    Mirror mirror = Mirror.subscribe(v, Runnable::run, closeables);
    publisher(r1, "n1", etcd.endpoint());
    publisher(r2, "n2", etcd.endpoint());
    publisher(r3, "n3", etcd.endpoint());

    await().atMost(Duration.ofSeconds(10)).until(() -> v.snapshot().entries().size() == 6 && v.snapshot().nodes().size() == 3);
    ClusterSnapshot s = v.snapshot();
    assertEquals("c1/1 n3/3 entries=4", counts(s, "ebs"));
    assertEquals("c0/0 n2/2 entries=2", counts(s, "nfs"));
    assertEquals(3, s.nodePlugins("n1").size());
    assertEquals(List.of("ebs"), s.plugins(PluginType.CSI_CONTROLLER).stream().map(PluginSummary::name).toList());

    // A crash of n2's ebs node plugin: the supervisor reports it unhealthy; the view shows it on n2 only.
    long t0 = System.nanoTime();
    r2.register(plugin(PluginType.CSI_NODE, "ebs", "n2-ebs", false));
    await().atMost(ETCD_WAIT).pollInterval(Duration.ofMillis(5))
        .until(() -> counts(v.snapshot(), "ebs").equals("c1/1 n2/3 entries=4"));
    long lagMs = (System.nanoTime() - t0) / 1_000_000;
    System.out.println("CATALOG unhealthy-visible-ms " + lagMs);
    CatalogEntry n2 = v.snapshot().nodePlugins("n2").stream().filter(e -> e.name().equals("ebs")).findFirst().orElseThrow();
    assertFalse(n2.healthy());
    assertEquals("probe failed", n2.healthMessage());
    assertTrue(v.snapshot().nodePlugins("n1").stream().allMatch(CatalogEntry::healthy));

    await().atMost(ETCD_WAIT).until(() -> mirror.content().equals(content(v.snapshot())));
    assertEquals(null, mirror.error);
  }

  @Test
  void killMinus9_entriesVanishWithinTtl_andRestartWithSameNodeIdHasNoDuplicates() throws Exception {
    PluginRegistry r1 = registry("n1", "node:ebs");
    publisher(r1, "n1", etcd.endpoint());
    EtcdClusterView v = view(Duration.ofMillis(100));
    Process child = startChild("n9");
    await().atMost(Duration.ofSeconds(10)).until(() -> counts(v.snapshot(), "ebs").equals("c1/1 n2/2 entries=3"));

    child.toHandle().destroyForcibly();
    long killed = System.nanoTime();
    child.waitFor();
    await().atMost(TTL.plus(ETCD_WAIT)).pollInterval(Duration.ofMillis(10))
        .until(() -> v.snapshot().nodePlugins("n9").isEmpty() && !v.snapshot().nodes().containsKey("n9"));
    System.out.println("CATALOG kill9-vanish-ms " + (System.nanoTime() - killed) / 1_000_000 + " (ttl " + TTL.toMillis() + " ms)");
    assertEquals("c0/0 n1/1 entries=1", counts(v.snapshot(), "ebs"));

    Process again = startChild("n9");
    long restarted = System.nanoTime();
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
        .until(() -> counts(v.snapshot(), "ebs").equals("c1/1 n2/2 entries=3"));
    System.out.println("CATALOG restart-visible-ms " + (System.nanoTime() - restarted) / 1_000_000);
    assertEquals(2, v.snapshot().nodePlugins("n9").size(), "no duplicates after restart");
    again.toHandle().destroyForcibly();
    again.waitFor();
  }

  private Process startChild(String nodeId) throws IOException {
    Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp", System.getProperty("java.class.path"), CatalogNodeMain.class.getName(),
        etcd.endpoint(), prefix, nodeId, Long.toString(TTL.toSeconds()), "node:ebs,controller:ebs")
        .redirectError(ProcessBuilder.Redirect.appendTo(tmp.resolve("child-" + nodeId + ".err").toFile()))
        .start();
    closeables.add(() -> p.toHandle().destroyForcibly());
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine();
    assertEquals("READY", line, "child " + nodeId + " said " + line);
    return p;
  }

  @Test
  void etcdStoppedForAWhile_registrationsGoOn_andTheViewConvergesWithoutReList() throws Exception {
    PluginRegistry r1 = registry("n1", "node:ebs");
    PluginRegistry r2 = registry("n2", "node:ebs,controller:ebs");
    CatalogPublisher p1 = publisher(r1, "n1", etcd.endpoint());
    CatalogPublisher p2 = publisher(r2, "n2", etcd.endpoint());
    EtcdClusterView v = view(Duration.ofMillis(100));
    await().atMost(Duration.ofSeconds(10)).until(() -> v.snapshot().entries().size() == 3);

    etcd.stop(); // until startAgain below: the registrations return although no change can be published
    r1.register(plugin(PluginType.CSI_NODE, "nfs", "n1-nfs", true));   // added meanwhile
    for (int v2 = 2; v2 <= 6; v2++) {                                   // and changed: coalesced, newest wins
      r1.register(plugin(PluginType.CSI_NODE, "nfs", "n1-nfs", true).withVersion(v2 + ".0"));
    }
    r2.deregister(PluginType.CSI_CONTROLLER, "ebs", "n2-ebs");          // removed meanwhile
    await().atMost(ETCD_WAIT).until(() -> p1.status().etcdErrors() > 0 && p2.status().etcdErrors() > 0);
    assertFalse(p1.status().connected());
    assertEquals(1, p1.status().backlog(), "six changes of one key wait as one: " + p1.status());

    etcd.startAgain();
    long back = System.nanoTime();
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() -> v.snapshot().nodePlugins("n1").size() == 2
        && v.snapshot().nodePlugins("n2").size() == 1 && p1.status().connected() && p2.status().connected());
    System.out.println("CATALOG outage-converge-ms " + (System.nanoTime() - back) / 1_000_000);
    assertEquals("c0/0 n2/2 entries=2", counts(v.snapshot(), "ebs"));
    assertEquals("c0/0 n1/1 entries=1", counts(v.snapshot(), "nfs"));
    assertEquals("6.0", v.snapshot().plugin("nfs").orElseThrow().entries().get(0).version());
    assertEquals(1, v.relists(), "the watch resumed from its revision, no re-list");
    assertTrue(v.etcdErrors() > 0);
  }

  @Test
  void watchResumeAfterCompaction_reListsAndSubscribersStayExact() throws Exception {
    PluginRegistry r1 = registry("n1", "node:ebs,node:nfs");
    CatalogPublisher p1 = publishedInSync(r1, "n1");
    EtcdClusterView v = view(Duration.ofMillis(100));
    var exec = Executors.newSingleThreadExecutor();
    closeables.add(exec::shutdownNow);
    Mirror mirror = Mirror.subscribe(v, exec, closeables);
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().entries().size() == 2);

    // The view loses its watch (a broken connection); while it is away etcd changes and compacts.
    var resume = new java.util.concurrent.CompletableFuture<Void>();
    v.dropWatchForTest(resume);
    await().atMost(ETCD_WAIT).until(() -> v.etcdErrors() > 0);
    r1.deregister(PluginType.CSI_NODE, "nfs", "n1-nfs");
    assertTrue(p1.awaitInSync(Duration.ofSeconds(5)));
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.endpoint()))) {
      // Another node's entry written meanwhile, then the history compacted past the view's revision.
      CatalogKeys keys = CatalogKeys.of(prefix);
      CatalogEntry added = CatalogEntry.of("nx", plugin(PluginType.CSI_NODE, "ebs", "nx-ebs", true));
      var resp = side.txn(TxnRequest.newBuilder()
          .addSuccess(RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder()
              .setKey(EtcdClient.bytes(keys.pluginKey("nx", plugin(PluginType.CSI_NODE, "ebs", "nx-ebs", true).key())))
              .setValue(CatalogCodec.encode(added))))
          .build());
      side.compact(resp.getHeader().getRevision());
    }
    resume.complete(null);
    Mirror m = mirror;
    await().atMost(Duration.ofSeconds(15)).until(() -> v.relists() == 2 && v.snapshot().entries().size() == 2
        && v.snapshot().nodePlugins("nx").size() == 1 && m.content().equals(content(v.snapshot())));
    assertEquals(null, m.error);
    assertTrue(m.events.stream().anyMatch(e -> e.kind() == ClusterEvent.Kind.PLUGIN_REMOVED && e.plugin().name().equals("nfs")));
    assertTrue(m.events.stream().anyMatch(e -> e.kind() == ClusterEvent.Kind.PLUGIN_ADDED && e.nodeId().equals("nx")));
  }

  @Test
  void nodeIdChange_newIdAppears_oldIdExpiresWithItsLease() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs");
    CatalogPublisher old = CatalogPublisher.builder().registry(r).etcd(EtcdOptions.of(etcd.endpoint())).prefix(prefix)
        .nodeId("old-id").leaseTtl(TTL).revokeOnClose(false).build();
    old.start();
    assertTrue(old.awaitInSync(Duration.ofSeconds(10)));
    EtcdClusterView v = view(Duration.ofMillis(100));
    assertEquals(1, v.snapshot().nodePlugins("old-id").size());
    old.close(); // stopped hard: the lease is not revoked
    publisher(r, "new-id", etcd.endpoint());
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().nodePlugins("new-id").size() == 1);
    await().atMost(TTL.plus(ETCD_WAIT)).until(() -> v.snapshot().nodePlugins("old-id").isEmpty());
    assertEquals("c0/0 n1/1 entries=1", counts(v.snapshot(), "ebs"));
    assertEquals(List.of("new-id"), List.copyOf(v.snapshot().nodes().keySet()));
  }

  private CatalogPublisher instance(PluginRegistry r, String nodeId, String instance, boolean revokeOnClose) {
    return instance(r, nodeId, instance, revokeOnClose, TTL);
  }

  private CatalogPublisher instance(PluginRegistry r, String nodeId, String instance, boolean revokeOnClose,
      Duration ttl) {
    CatalogPublisher p = track(CatalogPublisher.builder().registry(r).etcd(EtcdOptions.of(etcd.endpoint()))
        .prefix(prefix).nodeId(nodeId).instance(instance).leaseTtl(ttl).revokeOnClose(revokeOnClose)
        .backoff(Duration.ofMillis(100), Duration.ofMillis(300)).build());
    p.start();
    return p;
  }

  /** Issue 35 (9): one node id, one agent. The second is refused, takes over none of the first's keys. */
  @Test
  void aSecondAgentWithTheNodeIdOfALiveOne_isRefused_untilTheFirstLeaves() throws Exception {
    CatalogPublisher first = instance(registry("n1", "node:ebs"), "n1", "agent-a", true);
    assertTrue(first.awaitInSync(Duration.ofSeconds(10)));
    EtcdClusterView v = view(Duration.ofMillis(100));
    NodeIdInUseException inUse = org.junit.jupiter.api.Assertions.assertThrows(NodeIdInUseException.class,
        () -> CatalogPublisher.checkNodeIdFree(EtcdOptions.of(etcd.endpoint()), prefix, "n1", "agent-b"));
    assertTrue(inUse.getMessage().contains("node id n1 is in use by another agent (host "), inUse.getMessage());
    assertTrue(inUse.getMessage().contains("every agent needs its own cluster.node_id"), inUse.getMessage());
    CatalogPublisher.checkNodeIdFree(EtcdOptions.of(etcd.endpoint()), prefix, "n1", "agent-a"); // itself: free

    CatalogPublisher second = instance(registry("n1", "node:nfs"), "n1", "agent-b", true);
    await().atMost(ETCD_WAIT).until(() -> second.status().lastError().contains("in use by another agent"));
    assertFalse(second.awaitInSync(Duration.ofMillis(500)));
    assertEquals(List.of("ebs"), v.snapshot().nodePlugins("n1").stream().map(CatalogEntry::name).toList());
    assertTrue(second.status().etcdErrors() >= 1);

    first.close(); // leaves: lease revoked, node key gone; the second's next attempt creates it
    assertTrue(second.awaitInSync(Duration.ofSeconds(10)), second.status().toString());
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().nodePlugins("n1").stream()
        .map(CatalogEntry::name).toList().equals(List.of("nfs")));
  }

  /** The same agent restarted after a crash (its instance token from its data dir) takes its node key at once. */
  @Test
  void theSameInstanceRestartedWithinItsTtl_takesItsNodeKeyOver_withoutWaiting() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs");
    // A lease of a minute, so that in sync within the wait below is "without waiting for it to expire".
    Duration minute = Duration.ofMinutes(1);
    CatalogPublisher crashed = instance(r, "n1", "agent-a", false, minute);
    assertTrue(crashed.awaitInSync(ETCD_WAIT));
    crashed.close(); // as a crash: the lease is left to expire
    CatalogPublisher again = instance(r, "n1", "agent-a", true, minute);
    assertTrue(again.awaitInSync(ETCD_WAIT), again.status().toString());
    assertEquals("", again.status().lastError());
  }

  @Test
  void unreachableEtcdAtStart_publisherRetriesWithBoundedBacklog_thenConverges() throws Exception {
    int port = EtcdProcess.freePort();
    PluginRegistry r = registry("n1", "");
    CatalogPublisher p = track(CatalogPublisher.builder().registry(r).etcd(EtcdOptions.of("http://127.0.0.1:" + port)
        .withRequestTimeout(Duration.ofMillis(500))).prefix(prefix).nodeId("n1").leaseTtl(TTL)
        .backoff(Duration.ofMillis(100), Duration.ofMillis(400)).maxBacklog(3).build());
    p.start();
    // Registrations made before the publisher has subscribed (on its own thread) reach it in the subscription's
    // snapshot, not as backlog: registered one by one until four arrived as events past the bound of three. They
    // return although no etcd listens there until `late` below.
    int[] registered = {0};
    await().atMost(ETCD_WAIT).until(() -> {
      int i = registered[0]++;
      r.register(plugin(PluginType.CSI_NODE, "p" + i, "n1-p" + i, true));
      return p.status().overflows() >= 1 || registered[0] >= 100;
    });
    await().atMost(ETCD_WAIT).until(() -> p.status().etcdErrors() >= 3 && p.status().overflows() >= 1);
    PublisherStatus s = p.status();
    assertFalse(s.connected());
    assertTrue(s.backlog() <= 3, "backlog bounded: " + s);
    assertTrue(s.overflows() >= 1, "overflow counted: " + s);
    assertTrue(s.lastError().contains("127.0.0.1:" + port), s.lastError());

    try (EtcdProcess late = EtcdProcess.startOnPort(tmp, port)) {
      ClusterView v = track(ClusterView.builder().etcd(EtcdOptions.of(late.endpoint())).prefix(prefix).build());
      v.start();
      await().atMost(ETCD_WAIT).until(() -> v.snapshot().nodePlugins("n1").size() == registered[0]
          && p.status().connected());
      assertEquals(0, p.status().backlog());
      p.close();
      v.close();
    }
  }

  @Test
  void leaseLostBehindItsBack_nodeGrantsANewOneAndRepublishes() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs,controller:ebs");
    CatalogPublisher p = publishedInSync(r, "n1");
    EtcdClusterView v = view(Duration.ofMillis(100));
    long lease = p.status().leaseId();
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.endpoint()))) {
      side.revokeLease(lease); // as if it had expired during a partition: etcd drops every key on it
    }
    await().atMost(ETCD_WAIT).until(() -> p.status().leaseId() != lease && p.status().leaseId() != 0
        && v.snapshot().entries().size() == 2 && v.snapshot().nodes().containsKey("n1"));
    assertTrue(p.status().reconciles() >= 2, p.status().toString());
  }

  @Test
  void nodeKeyWrittenBehindItsBack_publisherWritesEveryKeyAgain() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs,node:nfs");
    CatalogPublisher p = publishedInSync(r, "n1");
    EtcdClusterView v = view(Duration.ofMillis(100));
    CatalogKeys keys = CatalogKeys.of(prefix);
    PluginInfo ebs = r.pluginForAlloc(PluginType.CSI_NODE, "ebs", "n1-ebs").orElseThrow();
    try (EtcdClient side = new EtcdClient(EtcdOptions.of(etcd.endpoint()))) {
      // What a write of an earlier connection applied late does (its answer was lost to a stopped member or a
      // dead leader): the node key put again and an older value of a plugin key, on the node's lease.
      ByteString node = side.range(RangeRequest.newBuilder().setKey(EtcdClient.bytes(keys.nodeKey("n1"))).build())
          .getKvs(0).getValue();
      long lease = p.status().leaseId();
      side.txn(TxnRequest.newBuilder()
          .addSuccess(RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder()
              .setKey(EtcdClient.bytes(keys.nodeKey("n1"))).setValue(node).setLease(lease)))
          .addSuccess(RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder()
              .setKey(EtcdClient.bytes(keys.pluginKey("n1", ebs.key())))
              .setValue(CatalogCodec.encode(CatalogEntry.of("n1", ebs.withVersion("0.9")))).setLease(lease)))
          .build());
    }
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().plugin("ebs").orElseThrow().entries().get(0)
        .version().equals("0.9"));
    // The next change's write finds the node key changed: the publisher reconnects and writes every key again.
    r.register(plugin(PluginType.CSI_NODE, "nfs", "n1-nfs", false));
    Map<String, CatalogEntry> want = new HashMap<>();
    r.listAll(PluginType.CSI_NODE).forEach(i -> want.put(Mirror.key(CatalogEntry.of("n1", i)), CatalogEntry.of("n1", i)));
    await().atMost(ETCD_WAIT).until(() -> content(v.snapshot()).equals(want));
    assertTrue(p.status().lastError().contains("changed behind"), p.status().lastError());
  }

  /**
   * A live node's lease revoked by someone else: an operator's {@code etcdctl lease revoke}, or etcd itself (a
   * leader paused past a TTL revokes leases it thinks expired when it resumes: etcd-io/etcd#15247, before 3.4.25
   * and 3.5.8). The node's keep-alive hears TTL 0; it takes a new lease and puts every key again, without waiting
   * for a registry change.
   */
  @Test
  void liveLeaseRevokedBySomeoneElse_newLeaseAndEveryKeyPutAgain() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs,controller:ebs,node:nfs");
    CatalogPublisher p = publishedInSync(r, "n1");
    EtcdClusterView v = view(Duration.ofMillis(100));
    Map<String, CatalogEntry> want = content(v.snapshot());
    assertEquals(3, want.size());
    long lease = p.status().leaseId();
    try (EtcdClient c = new EtcdClient(EtcdOptions.of(etcd.endpoint()))) {
      c.revokeLease(lease);
    }
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().entries().isEmpty());
    await().atMost(ETCD_WAIT).until(() -> p.status().leaseId() != lease && p.status().connected()
        && content(v.snapshot()).equals(want) && v.snapshot().nodes().containsKey("n1"));
    try (EtcdClient c = new EtcdClient(EtcdOptions.of(etcd.endpoint()))) {
      assertEquals(4, c.leaseKeys(p.status().leaseId()).size(), "the node key and every plugin key on the new lease");
    }
  }

  @Test
  void close_revokesTheLease_nodeLeavesAtOnce() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs,controller:ebs");
    CatalogPublisher p = publishedInSync(r, "n1");
    EtcdClusterView v = view(Duration.ofMillis(100));
    assertEquals(2, v.snapshot().entries().size());
    p.close();
    // Gone from etcd when close returns (it waits for the revoke), not when the lease would expire.
    ClusterSnapshot right = ClusterView.read(EtcdOptions.of(etcd.endpoint()), prefix);
    assertTrue(right.entries().isEmpty() && right.nodes().isEmpty(), right.toString());
    await().atMost(TTL.multipliedBy(5)).until(() -> v.snapshot().entries().isEmpty() && v.snapshot().nodes().isEmpty());
    p.close(); // idempotent
  }

  @Test
  void subscribers_areIsolated_aThrowingOneKeepsGoing_aStuckOneIsLagged() throws Exception {
    PluginRegistry r = registry("n1", "");
    publisher(r, "n1", etcd.endpoint());
    EtcdClusterView v = (EtcdClusterView) track(ClusterView.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix(prefix)
        .maxSubscriberBacklog(3).build());
    v.start();
    assertTrue(v.awaitSynced(Duration.ofSeconds(10)));
    // The node key first, so that what the listeners are handed afterwards is exactly the 8 plugins below
    // (a node key that lands after subscribing would be a 9th event, one that lands before is in the snapshot).
    await().atMost(Duration.ofSeconds(10)).until(() -> v.snapshot().nodes().containsKey("n1"));
    AtomicInteger thrown = new AtomicInteger();
    track(v.subscribe(e -> {
      thrown.incrementAndGet();
      throw new IllegalStateException("listener bug");
    }, Runnable::run));
    java.util.concurrent.CountDownLatch stuck = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicLong laggedAt = new java.util.concurrent.atomic.AtomicLong(-1);
    java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    var stuckExec = Executors.newSingleThreadExecutor();
    closeables.add(stuckExec::shutdownNow);
    ClusterSubscription slow = v.subscribe(new ClusterListener() {
      @Override
      public void onEvent(ClusterEvent e) {
        try {
          stuck.await();
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
        }
      }

      @Override
      public void onLagged(long last) {
        laggedAt.set(last);
      }

      @Override
      public void onClosed() {
        closed.set(true);
      }
    }, stuckExec);
    Mirror mirror = Mirror.subscribe(v, Runnable::run, closeables);
    for (int i = 0; i < 8; i++) {
      r.register(plugin(PluginType.CSI_NODE, "p" + i, "n1-p" + i, true));
    }
    await().atMost(ETCD_WAIT).until(() -> mirror.content().size() == 8);
    assertEquals(null, mirror.error);
    assertTrue(thrown.get() >= 8, "the throwing listener still gets every change: " + thrown.get());
    assertFalse(slow.isActive(), "the stuck one is dropped");
    stuck.countDown();
    await().atMost(ETCD_WAIT).until(closed::get);
    assertEquals(slow.snapshotSequence() + 1, laggedAt.get(), "it had been handed only the first change");
  }

  @Test
  void deregisterAndReRegister_followTheRegistry() throws Exception {
    PluginRegistry r = registry("n1", "node:ebs");
    CatalogPublisher p = publisher(r, "n1", etcd.endpoint());
    EtcdClusterView v = view(Duration.ofMillis(100));
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().entries().size() == 1);
    r.deregister(PluginType.CSI_NODE, "ebs", "n1-ebs");
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().entries().isEmpty());
    r.register(plugin(PluginType.CSI_NODE, "ebs", "n1-ebs", true).withVersion("2.0.0"));
    await().atMost(ETCD_WAIT).until(() -> v.snapshot().entries().size() == 1
        && v.snapshot().entries().get(0).version().equals("2.0.0"));
    assertTrue(p.awaitInSync(Duration.ofSeconds(5)));
    assertTrue(p.status().published() >= 3, p.status().toString());
    ClusterSnapshot once = ClusterView.read(EtcdOptions.of(etcd.endpoint()), prefix);
    assertEquals(content(v.snapshot()), content(once));
    assertEquals(v.snapshot().nodes(), once.nodes());
  }
}
