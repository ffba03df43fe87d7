package dev.csisupervisor.agent.cluster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.ClaimRequest;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.DetachOrder;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import dev.csisupervisor.volumes.MountedVolume;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeException;
import dev.csisupervisor.volumes.VolumeManager;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three agents' volume sides on a real three-member etcd: each node a registry, a catalog publisher, a volume
 * manager with its own mock node plugin, and {@link ClusterVolumeClaims}; node n0 also runs the controller and the
 * {@link ClusterController}; the mock plugins share a "cloud" (a file-locked state file) that refuses to attach a
 * single-node disk to a second node, so a double attachment would fail the test.
 */
class ClusterVolumesAgentTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String PLUGIN = "mono";
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static int prefixes;

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/agents" + (++prefixes);
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2);
  private final Cloud cloud = new Cloud();
  private final Path cloudFile = tmp.resolve("cloud" + prefixes);
  /** How long the cloud takes to attach a disk. */
  private Duration attachTime = Duration.ofMillis(20);
  private final List<Node> nodes = new ArrayList<>();

  @BeforeAll
  static void startEtcd() throws Exception {
    etcd = EtcdCluster.start(tmp, 3);
  }

  @AfterAll
  static void stopEtcd() {
    if (etcd != null) {
      etcd.close();
    }
  }

  /** Whether the test forces what the oracle counts (an operator's detach by hand), so its counts are not checked. */
  private boolean forcesTheOracle;

  @AfterEach
  void closeAll() throws Exception {
    // The cloud as oracle (mock-plugin/README.md): no single-node disk on two nodes, no detach under a staged or
    // published volume, no call of a deposed controller agent; and at the end nothing attached that etcd does not
    // record.
    if (Files.exists(cloudFile) && !forcesTheOracle) {
      dev.csisupervisor.mockplugin.CloudReport report = dev.csisupervisor.mockplugin.CloudReport.read(cloudFile);
      assertEquals(0, report.total(), report.toJson());
      if (!nodes.isEmpty()) {
        ClusterVolumes v = nodes.get(0).volumes();
        try {
          assertEquals(List.of(), report.unrecorded((vol, csiNode) -> v.read().attachments().stream().anyMatch(
              a -> a.volumeId().equals(vol) && a.csiNodeId().equals(csiNode))), report.toJson());
        } catch (dev.csisupervisor.catalog.EtcdException closed) {
          // the test closed the first node's client: the counts above are the oracle's word
        }
      }
    }
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    scheduler.shutdownNow();
    for (EtcdCluster.Member m : etcd.members()) {
      if (!m.answering()) {
        etcd.resume(m);
      }
    }
  }

  /** The mock plugins' shared cloud, read from its file: the nodes a disk is attached to. */
  final class Cloud {
    Set<String> on(String volume) throws java.io.IOException {
      Set<String> out = new HashSet<>();
      if (!Files.exists(cloudFile)) {
        return out;
      }
      for (String line : Files.readAllLines(cloudFile)) {
        String[] f = line.split(" ");
        if (f.length == 4 && f[0].equals("attached")
            && java.net.URLDecoder.decode(f[1], java.nio.charset.StandardCharsets.UTF_8).equals(volume)) {
          out.add(java.net.URLDecoder.decode(f[2], java.nio.charset.StandardCharsets.UTF_8));
        }
      }
      return out;
    }
  }

  record Node(String id, PluginRegistry registry, CatalogPublisher publisher, ClusterVolumes volumes,
      ClusterVolumeClaims claims, VolumeManager manager, CsiClient client, Optional<ClusterController> controller,
      Path socket, MockCsiPlugin plugin) {}

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  private EtcdOptions etcdFor(int i) {
    List<String> endpoints = new ArrayList<>();
    for (int k = 0; k < 3; k++) {
      endpoints.add(etcd.member((i + k) % 3).endpoint());
    }
    return EtcdOptions.of(endpoints.toArray(String[]::new)).withRequestTimeout(Duration.ofSeconds(1));
  }

  private Node node(int i, boolean controller) throws Exception {
    return node(i, controller, Optional.empty());
  }

  private Node node(int i, boolean controller, Optional<Duration> detachAfter) throws Exception {
    return node(i, controller, detachAfter, Duration.ofMillis(100));
  }

  /** @param every the controller's rounds (the first at once) */
  private Node node(int i, boolean controller, Optional<Duration> detachAfter, Duration every) throws Exception {
    String id = "n" + i;
    ShortTempDir dir = track(new ShortTempDir("cv" + i));
    Path csiRoot = dir.resolve("csi");
    Path socket = csiRoot.resolve("monolith").resolve(PLUGIN).resolve("csi.sock");
    Files.createDirectories(socket.getParent());
    MockCsiPlugin plugin = track(MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities()
        .nodeId("csi-" + id).cloud(cloudFile, attachTime).start());
    PluginRegistry registry = track(PluginRegistry.builder().stateStore(new InMemoryStateStore()).build());
    registry.register(info(PluginType.CSI_NODE, socket, "csi-" + id));
    if (controller) {
      registry.register(info(PluginType.CSI_CONTROLLER, socket, ""));
    }
    CatalogPublisher publisher = track(CatalogPublisher.builder().registry(registry).etcd(etcdFor(i)).prefix(prefix)
        .nodeId(id).leaseTtl(Duration.ofSeconds(3)).backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build());
    publisher.start();
    assertTrue(publisher.awaitInSync(WAIT), "publisher in sync");
    ClusterVolumes volumes = track(ClusterVolumes.builder().etcd(etcdFor(i)).prefix(prefix).nodeId(id)
        .leaseTtl(Duration.ofSeconds(2)).build());
    ClusterVolumeClaims claims = track(new ClusterVolumeClaims(
        () -> Optional.of(new ClusterVolumeClaims.Membership(volumes, id, publisher::status)), registry, scheduler,
        Duration.ofSeconds(20), Duration.ZERO));
    VolumeManager manager = track(VolumeManager.builder().registry(registry).stateStore(new InMemoryStateStore())
        .csiRoot(csiRoot).scheduler(scheduler).mountTable(Optional.empty()).clusterClaims(claims)
        .pendingRetryMax(Duration.ofSeconds(1)).build());
    claims.bind(manager);
    CsiClient client = track(CsiClient.create(socket));
    ClusterController c = null;
    if (controller) {
      c = track(new ClusterController(volumes, id, registry, p -> client,
          Duration.ofSeconds(5), detachAfter, Clock.systemUTC())).identifyCalls();
      c.start(every);
    }
    Node n = new Node(id, registry, publisher, volumes, claims, manager, client, Optional.ofNullable(c), socket,
        plugin);
    nodes.add(n);
    return n;
  }

  private static PluginInfo info(PluginType type, Path socket, String csiNodeId) {
    Set<String> controllerCaps = type == PluginType.CSI_CONTROLLER
        ? Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME") : Set.of();
    Set<String> nodeCaps = type == PluginType.CSI_NODE ? Set.of("STAGE_UNSTAGE_VOLUME") : Set.of();
    Fingerprint f = new Fingerprint(PLUGIN, "1.0", Map.of(),
        type == PluginType.CSI_CONTROLLER ? Set.of("SERVICE:CONTROLLER_SERVICE") : Set.of(), controllerCaps, nodeCaps,
        csiNodeId, 0, Map.of());
    return new PluginInfo(type, PLUGIN, "1.0", "alloc-" + type.id(), socket, Map.of(), f,
        PluginHealth.healthy(Instant.now()), false);
  }

  /** A disk made in the cloud by the first node's controller, registered in the cluster. */
  private String disk(String name) throws Exception {
    String id = nodes.get(0).client().createVolumeAsync(new CreateVolumeRequest(name, Optional.empty(), List.of(RWO),
        Map.of(), Secrets.none())).get(10, TimeUnit.SECONDS).volumeId();
    nodes.get(0).volumes().register(new ClusterVolume(PLUGIN, id, 0, Set.of(), List.of(), Map.of(), Map.of()));
    return id;
  }

  private static <T> T get(CompletableFuture<T> f) throws Exception {
    return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  private static VolumeException failure(CompletableFuture<?> f) {
    Throwable t = f.handle((v, e) -> e).orTimeout(WAIT.toSeconds(), TimeUnit.SECONDS).join();
    return VolumeException.find(t).orElseThrow(() -> new AssertionError("not a VolumeException", t));
  }

  @Test
  void attachOnAnotherNode_singleWriterHeldClusterWide_thenHandedOverAfterDetach() throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    Node n2 = node(2, false);
    String vol = disk("d1");

    MountedVolume m = get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    assertEquals(Map.of("device", "/dev/mock/" + vol),
        n1.manager().find(PLUGIN, vol).orElseThrow().publishContext(), "staged with the cloud's publish context");
    assertEquals(Set.of("csi-n1"), cloud.on(vol));
    assertTrue(Files.exists(m.targetPath().getParent()));

    VolumeException refused = failure(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertEquals(VolumeException.Reason.CLUSTER_REFUSED, refused.reason());
    assertTrue(refused.getMessage().contains("node n1, alloc a1"), refused.getMessage());
    assertTrue(n2.manager().list().isEmpty(), "nothing done on n2");

    get(n1.manager().unmount(PLUGIN, vol, "a1"));
    await().atMost(WAIT).until(() -> n0.volumes().claims(PLUGIN, vol).isEmpty() && cloud.on(vol).isEmpty()
        && n0.volumes().attachment(PLUGIN, vol, "n1").isEmpty());

    get(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertEquals(Set.of("csi-n2"), cloud.on(vol));
    assertEquals(1, n0.manager().list().size() + n2.manager().list().size(), "n2 alone has it");
  }

  @Test
  void aFailingUnstage_keepsTheClaimAndTheAttachment_untilTheUnstageSucceeds() throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    Node n2 = node(2, false);
    String vol = disk("busy");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    n1.plugin().failCalls(dev.csisupervisor.csi.v1.NodeGrpc.getNodeUnstageVolumeMethod(), io.grpc.Status.Code.INTERNAL,
        "target is busy", -1);

    CompletableFuture<Void> unmount = n1.manager().unmount(PLUGIN, vol, "a1"); // done once unstaged too
    // Unpublished, not unstaged: the node still has the disk staged, so its claim and the attachment stay.
    await().atMost(WAIT).until(() -> n1.manager().find(PLUGIN, vol)
        .map(r -> r.allocs().isEmpty() && !r.stagings().isEmpty()).orElse(false));
    await().during(Duration.ofSeconds(2)).atMost(WAIT).until(() -> n0.volumes().claims(PLUGIN, vol).size() == 1
        && n0.volumes().attachment(PLUGIN, vol, "n1").isPresent() && cloud.on(vol).equals(Set.of("csi-n1")));
    VolumeException refused = failure(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertTrue(refused.getMessage().contains("node n1, alloc a1"), refused.getMessage());
    assertTrue(n2.manager().list().isEmpty(), "nothing done on n2");

    // The unstage succeeds (retried by the node): only then the claim goes, and the controller detaches.
    n1.plugin().clearFaults();
    get(unmount);
    await().atMost(WAIT).until(() -> n1.manager().find(PLUGIN, vol).isEmpty()
        && n0.volumes().claims(PLUGIN, vol).isEmpty() && cloud.on(vol).isEmpty());
    get(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertEquals(Set.of("csi-n2"), cloud.on(vol));
  }

  @Test
  void aPublishLongerThanTheElectionLease_goesOnWhileTheLeaseIsRenewed_untilTheCallTimeout_thenIsSentAgain()
      throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    String vol = disk("slow");
    n0.plugin().hangCalls(dev.csisupervisor.csi.v1.ControllerGrpc.getControllerPublishVolumeMethod(), 1);
    CompletableFuture<MountedVolume> mount = n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false));
    // The intent is written, the call sent and not answered. The lease (2 s) is renewed meanwhile, so the call is
    // not cut at the lease's end (a cloud attach may take longer than a lease period) but at the call timeout (5 s);
    // the intent says so, and the call is sent again after a backoff; then the mount goes through.
    // The attachment as read when it said so (the retry, a second later, may have attached it by the next read).
    dev.csisupervisor.catalog.ClusterAttachment a = await().atMost(WAIT)
        .until(() -> n0.volumes().attachment(PLUGIN, vol, "n1"),
            read -> read.map(x -> x.message().contains("no answer within")).orElse(false))
        .orElseThrow();
    assertEquals(dev.csisupervisor.catalog.ClusterAttachment.State.ATTACHING, a.state());
    assertTrue(a.message().contains("within the call timeout of 5000 ms"), a.message());
    assertTrue(a.retryAt().isPresent(), "sent again after a backoff, not at once: " + a);
    get(mount);
    assertEquals(Set.of("csi-n1"), cloud.on(vol));
  }

  @Test
  void theControllerAgentCutOffFromEtcd_cancelsItsCallsInFlight_andSendsNoMore() throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    String vol = disk("cutoff");
    n0.plugin().hangCalls(dev.csisupervisor.csi.v1.ControllerGrpc.getControllerPublishVolumeMethod(), -1);
    CompletableFuture<MountedVolume> mount = n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false));
    await().atMost(WAIT).until(() -> !n0.controller().orElseThrow().inFlight().isEmpty());
    long sent = n0.plugin().callCount(dev.csisupervisor.csi.v1.ControllerGrpc.getControllerPublishVolumeMethod());
    etcd.members().forEach(etcd::pause); // the controller agent can no longer renew its election lease
    // Cancelled at the election lease's deadline (its 2 s less a margin), before the call's own timeout (5 s).
    await().atMost(Duration.ofMillis(4500)).until(() -> n0.controller().orElseThrow().inFlight().isEmpty());
    // While it cannot be sure of its election, it sends nothing more.
    await().during(Duration.ofSeconds(2)).atMost(WAIT).until(() -> n0.plugin()
        .callCount(dev.csisupervisor.csi.v1.ControllerGrpc.getControllerPublishVolumeMethod()) == sent);
    etcd.members().forEach(etcd::resume);
    n0.plugin().clearFaults();
    get(mount);
    assertEquals(Set.of("csi-n1"), cloud.on(vol));
  }

  @Test
  void aNewClaim_isAttachedOnTheWatchsHint_andAReleasedOneDetached_withoutWaitingForARound() throws Exception {
    Node n0 = node(0, true, Optional.empty(), Duration.ofHours(1)); // one round at start, then only the hints
    Node n1 = node(1, false);
    String vol = disk("hinted");

    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    assertEquals(Set.of("csi-n1"), cloud.on(vol), "attached with no round due for an hour");
    get(n1.manager().unmount(PLUGIN, vol, "a1"));
    await().atMost(WAIT).until(() -> cloud.on(vol).isEmpty() && n0.volumes().attachment(PLUGIN, vol, "n1").isEmpty());
  }

  @Test
  void attachOnTheControllersOwnNode() throws Exception {
    Node n0 = node(0, true);
    String vol = disk("d2");
    get(n0.manager().mount(VolumeClaim.of(PLUGIN, vol, "a0", RWO, false)));
    assertEquals(Set.of("csi-n0"), cloud.on(vol));
    get(n0.manager().unmount(PLUGIN, vol, "a0"));
    await().atMost(WAIT).until(() -> cloud.on(vol).isEmpty() && n0.volumes().claims(PLUGIN, vol).isEmpty());
  }

  @Test
  void etcdUnreachable_newClaimsRefusedAtOnce_unmountLocal_releaseWhenBack() throws Exception {
    node(0, true);
    Node n1 = node(1, false);
    String vol = disk("d3");
    String other = disk("d4");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));

    etcd.members().forEach(etcd::pause);
    await().atMost(WAIT).until(() -> !n1.publisher().status().connected());
    VolumeException e = failure(n1.manager().mount(VolumeClaim.of(PLUGIN, other, "a2", RWO, false)));
    assertEquals(VolumeException.Reason.CLUSTER_REFUSED, e.reason());
    // Refused from the publisher's state, without an etcd request (one would fail with its own timeout's words).
    assertTrue(e.getMessage().contains("etcd cannot be reached now"), e.getMessage());

    get(n1.manager().unmount(PLUGIN, vol, "a1")); // the node unmounts without etcd
    assertTrue(n1.manager().list().isEmpty());
    await().atMost(WAIT).until(() -> n1.claims().pendingReleases() == 1);

    etcd.members().forEach(etcd::resume);
    await().atMost(WAIT).until(() -> n1.claims().pendingReleases() == 0);
    assertEquals(List.of(), n1.volumes().claims(PLUGIN, vol), "released once etcd was back");
  }

  @Test
  void claimsNoRecordHolds_areReleasedBySweep_andMountedOnesStay() throws Exception {
    Node n1 = node(1, false);
    String vol = disk("d5");
    String kept = disk("d6");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, kept, "k1", RWO, false)));
    // A claim left by a crash between the unmount's commit and its release: etcd has it, the journal does not.
    n1.volumes().claim(new ClaimRequest(PLUGIN, vol, "n1", "crashed", VolumeAccessMode.SINGLE_NODE_WRITER, false,
        "csi-n1", Map.of()));
    assertEquals(List.of("crashed"), n1.claims().sweep().stream().map(c -> c.allocId()).toList());
    assertEquals(List.of(), n1.volumes().claims(PLUGIN, vol));
    assertEquals(1, n1.volumes().claims(PLUGIN, kept).size(), "a mounted allocation's claim stays");
  }

  @Test
  void controllerAgentGone_itsSuccessorUnpublishes() throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    Node n2 = node(2, true);
    String vol = disk("d7");
    await().atMost(WAIT).until(() -> n1.volumes().read().controllers().containsKey(PLUGIN));
    String first = n1.volumes().read().controllers().get(PLUGIN);
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    assertEquals(Set.of("csi-n1"), cloud.on(vol));

    Node leader = first.equals("n0") ? n0 : n2;
    leader.controller().orElseThrow().close();
    leader.volumes().close(); // its election lease revoked: the other controller agent is elected
    String successor = first.equals("n0") ? "n2" : "n0";
    await().atMost(WAIT).until(() -> successor.equals(n1.volumes().read().controllers().get(PLUGIN)));

    get(n1.manager().unmount(PLUGIN, vol, "a1"));
    await().atMost(WAIT).until(() -> cloud.on(vol).isEmpty() && n1.volumes().attachment(PLUGIN, vol, "n1").isEmpty());
  }

  @Test
  void lostNode_keepsItsClaims_untilTheOperatorForces() throws Exception {
    forcesTheOracle = true; // the operator detaches by hand a disk whose node (here still running) is "gone"
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    Node n2 = node(2, false);
    String vol = disk("d8");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    n1.publisher().close(); // the node leaves (its lease revoked): lost, as far as the cluster can tell
    await().atMost(WAIT).until(() -> !n0.volumes().read().liveNodes().contains("n1"));

    VolumeException refused = failure(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertTrue(refused.getMessage().contains("node n1, alloc a1"), refused.getMessage());
    assertEquals(Set.of("csi-n1"), cloud.on(vol), "no lease expiry detaches anything");

    assertEquals(1, n0.volumes().forceDetach("n1", Optional.empty(), Optional.empty()).size());
    // Forced without any unpublish: the cloud still has the disk on n1 and refuses n2 (no double attachment).
    VolumeException stillOnN1 = failure(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertTrue(stillOnN1.getMessage().contains("FAILED_PRECONDITION"), stillOnN1.getMessage());
    // What the operator does by hand before forcing, for a node that is gone: detach the disk in the cloud.
    n0.client().controllerUnpublishVolumeAsync(vol, "csi-n1", Secrets.none()).get(10, TimeUnit.SECONDS);
    get(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertEquals(Set.of("csi-n2"), cloud.on(vol));
  }

  @Test
  void aMountWhoseClaimWasForced_isUnmountedByItsNode_asFenced_notKept() throws Exception {
    forcesTheOracle = true; // forced without any unpublish: the cloud keeps the disk on n1, which no key records
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    String vol = disk("forced");
    String kept = disk("kept");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, kept, "a2", RWO, false)));
    n0.volumes().forceDetach("n1", Optional.of(PLUGIN), Optional.of(vol));
    n1.claims().sweep(); // the first sweep that finds the claim gone only notes it
    assertTrue(n1.manager().find(PLUGIN, vol).isPresent());
    n1.claims().sweep();
    await().atMost(WAIT).until(() -> n1.manager().find(PLUGIN, vol).isEmpty());
    assertTrue(n1.manager().find(PLUGIN, kept).isPresent(), "a mount whose claim stands is kept");
    assertEquals(1, n0.volumes().claims(PLUGIN, kept).size());
  }

  /** Issue 35 (5): an operator's detach of a gone node goes through the controller's unpublish first. */
  @Test
  void aGoneNodesDetach_orderedByAnOperator_isUnpublishedFirst_thenItsClaimsGo_evenAfterACleanStop() throws Exception {
    forcesTheOracle = true; // the operator says n1 is gone (here its plugin runs on, staged)
    Node n0 = node(0, true); // no detach_after: only the order fences
    Node n1 = node(1, false);
    Node n2 = node(2, false);
    String vol = disk("ordered");
    String other = disk("not-ordered");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, other, "a2", RWO, false)));
    n1.volumes().markStopped(); // a clean stop: never fenced by itself
    n1.publisher().close();
    await().atMost(WAIT).until(() -> !n0.volumes().read().liveNodes().contains("n1"));

    n0.volumes().orderDetach(new DetachOrder("n1", Optional.of(PLUGIN), Optional.of(vol), java.time.Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().claims(PLUGIN, vol).isEmpty());
    assertEquals(Set.of(), cloud.on(vol), "ControllerUnpublishVolume before the claim went");
    assertEquals(Set.of("csi-n1"), cloud.on(other), "what the order does not name stays");
    assertEquals(1, n0.volumes().claims(PLUGIN, other).size());
    assertTrue(n0.volumes().withdrawDetach("n1"));
    get(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertEquals(Set.of("csi-n2"), cloud.on(vol));
  }

  @Test
  void aLiveNode_isNotDetachedByAnOrder_andRemovesAnOrderLeftFromWhenItWasGone() throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    String vol = disk("live");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    n0.volumes().orderDetach(new DetachOrder("n1", Optional.empty(), Optional.empty(), java.time.Instant.now()));
    for (int i = 0; i < 3; i++) {
      n0.controller().orElseThrow().runOnce();
    }
    assertEquals(Set.of("csi-n1"), cloud.on(vol));
    assertEquals(1, n0.volumes().claims(PLUGIN, vol).size());
    // An order whose --wait timed out would otherwise stay, and fence n1 at once the next time it is lost.
    // Its sweep removes it once its node key is there (published on its own thread after start; a loaded machine
    // may not have it yet at the first sweep): swept as the agent does, until it is.
    await().atMost(WAIT).until(() -> {
      n1.claims().sweep();
      return n0.volumes().read().detachOrders().isEmpty();
    });
    assertEquals(Map.of(), n0.volumes().read().detachOrders(), "the live node removed the order against it");
  }

  @Test
  void lostNode_pastDetachAfter_isFencedByTheUnpublish_thenItsClaimsGo() throws Exception {
    forcesTheOracle = true; // the fence detaches from a node taken for dead (here its plugin runs on, staged)
    Node n0 = node(0, true, Optional.of(Duration.ofSeconds(1)));
    Node n1 = node(1, false);
    Node n2 = node(2, false);
    String vol = disk("d9");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    n1.publisher().close();
    await().atMost(WAIT).until(() -> n0.volumes().claims(PLUGIN, vol).isEmpty());
    assertEquals(Set.of(), cloud.on(vol), "unpublished (the fence) before the claims went");
    await().atMost(WAIT).until(() -> n0.controller().orElseThrow().counts().fenced() >= 1);
    get(n2.manager().mount(VolumeClaim.of(PLUGIN, vol, "b1", RWO, false)));
    assertEquals(Set.of("csi-n2"), cloud.on(vol));
  }

  @Test
  void controllerAgentKilledMidPublish_itsSuccessorFinishesIt() throws Exception {
    attachTime = Duration.ofSeconds(1);
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    Node n2 = node(2, true);
    String vol = disk("d10");
    await().atMost(WAIT).until(() -> n1.volumes().read().controllers().containsKey(PLUGIN));
    String first = n1.volumes().read().controllers().get(PLUGIN);
    CompletableFuture<MountedVolume> mount = n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false));
    // The leader's ControllerPublishVolume is under way (the cloud takes 1 s): kill the leader.
    Node leader = first.equals("n0") ? n0 : n2;
    await().atMost(WAIT).until(() -> !leader.controller().orElseThrow().inFlight().isEmpty());
    leader.controller().orElseThrow().close();
    leader.volumes().close();
    assertEquals(dev.csisupervisor.catalog.ClusterAttachment.State.ATTACHING,
        n1.volumes().attachment(PLUGIN, vol, "n1").orElseThrow().state(),
        "the dead leader wrote its intent, not an attachment");

    get(mount); // the successor published again (the same node: the cloud's attach is idempotent)
    String successor = first.equals("n0") ? "n2" : "n0";
    assertEquals(successor, n1.volumes().attachment(PLUGIN, vol, "n1").orElseThrow().controllerNodeId());
    assertEquals(Set.of("csi-n1"), cloud.on(vol));
  }

  /** A controller client whose CreateVolume and DeleteVolume first answer the scripted codes, then the plugin's. */
  private static class Scripted extends dev.csisupervisor.client.ForwardingCsiClient {
    final CsiClient plugin;
    final java.util.Queue<StatusCode> createCodes = new java.util.concurrent.ConcurrentLinkedQueue<>();
    final java.util.Queue<StatusCode> deleteCodes = new java.util.concurrent.ConcurrentLinkedQueue<>();
    final java.util.concurrent.atomic.AtomicInteger creates = new java.util.concurrent.atomic.AtomicInteger();

    Scripted(CsiClient plugin) {
      this.plugin = plugin;
    }

    @Override
    protected CsiClient delegate() {
      return plugin;
    }

    private static <T> CompletableFuture<T> failed(String method, StatusCode code) {
      return CompletableFuture.failedFuture(new CsiStatusException(Path.of("/scripted.sock"), method, code,
          "scripted " + code));
    }

    @Override
    public CompletableFuture<dev.csisupervisor.client.CsiVolume> createVolumeAsync(CreateVolumeRequest r) {
      creates.incrementAndGet();
      StatusCode c = createCodes.poll();
      return c == null ? plugin.createVolumeAsync(r) : failed("CreateVolume", c);
    }

    @Override
    public CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets) {
      StatusCode c = deleteCodes.poll();
      return c == null ? plugin.deleteVolumeAsync(volumeId, secrets) : failed("DeleteVolume", c);
    }
  }

  @Test
  void theControllerPublishes_withTheClaimsAccessType_aBlockDeviceOrAFileSystemOfItsType() throws Exception {
    Node n0 = node(0, false);
    Node n1 = node(1, false);
    n0.registry().register(info(PluginType.CSI_CONTROLLER, n0.socket(), ""));
    List<VolumeCapability> published = new java.util.concurrent.CopyOnWriteArrayList<>();
    CsiClient plugin = n0.client();
    CsiClient recording = new dev.csisupervisor.client.ForwardingCsiClient() {
      @Override
      protected CsiClient delegate() {
        return plugin;
      }

      @Override
      public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(
          dev.csisupervisor.client.ControllerPublishRequest r) {
        published.add(r.capability());
        return plugin.controllerPublishVolumeAsync(r);
      }
    };
    track(new ClusterController(n0.volumes(), "n0", n0.registry(), p -> recording, Duration.ofSeconds(5),
        Optional.empty(), Clock.systemUTC())).start(Duration.ofMillis(100));
    String raw = disk("raw");
    String fs = disk("fs");

    VolumeCapability block = VolumeCapability.block(AccessMode.SINGLE_NODE_WRITER);
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, raw, "a1", block, false)));
    VolumeCapability xfs = VolumeCapability.mount("xfs", List.of(), AccessMode.SINGLE_NODE_WRITER);
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, fs, "a2", xfs, false)));

    assertEquals(List.of(block, xfs), published, "published as each claim uses it (a block volume was a mount)");
    assertEquals(dev.csisupervisor.catalog.ClaimAccess.BLOCK,
        n0.volumes().claims(PLUGIN, raw).get(0).access(), "the claim says block");
  }

  @Test
  void aCreateStillUnderWay_holdsNoAttachBack() throws Exception {
    Node n0 = node(0, false);
    Node n1 = node(1, false);
    n0.registry().register(info(PluginType.CSI_CONTROLLER, n0.socket(), ""));
    CompletableFuture<Void> cloudAnswers = new CompletableFuture<>();
    java.util.concurrent.atomic.AtomicInteger sent = new java.util.concurrent.atomic.AtomicInteger();
    Scripted client = new Scripted(n0.client()) {
      @Override
      public CompletableFuture<dev.csisupervisor.client.CsiVolume> createVolumeAsync(CreateVolumeRequest r) {
        sent.incrementAndGet();
        return cloudAnswers.thenCompose(x -> super.createVolumeAsync(r)); // a cloud taking its time
      }
    };
    // A call timeout far past the test's waits: a round that waited for the create would attach nothing meanwhile.
    track(new ClusterController(n0.volumes(), "n0", n0.registry(), p -> client, Duration.ofMinutes(10),
        Optional.empty(), Clock.systemUTC())).start(Duration.ofMillis(100));
    ClusterVolumeRequest.Spec spec = new ClusterVolumeRequest.Spec(1 << 20, 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
    n0.volumes().requestCreate(ClusterVolumeRequest.create(PLUGIN, "slow", spec, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "slow")
        .orElseThrow().controllerNodeId().equals("n0"));

    String vol = disk("meanwhile");
    get(n1.manager().mount(VolumeClaim.of(PLUGIN, vol, "a1", RWO, false)));
    assertEquals(Set.of("csi-n1"), cloud.on(vol), "attached while the create waits for its cloud");
    assertEquals(ClusterVolumeRequest.State.PENDING,
        n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "slow").orElseThrow().state());
    assertEquals(1, sent.get(), "sent once, not again at each round while under way");

    cloudAnswers.complete(null);
    await().atMost(WAIT).until(() -> n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "slow")
        .orElseThrow().state() == ClusterVolumeRequest.State.DONE);
  }

  /** The cloud's disks by name (the mock's file: {@code disk ID CAPACITY [NAME]}). */
  private Set<String> diskNames() throws java.io.IOException {
    Set<String> out = new HashSet<>();
    for (String line : Files.exists(cloudFile) ? Files.readAllLines(cloudFile) : List.<String>of()) {
      String[] f = line.split(" ");
      if (f[0].equals("disk") && f.length == 4) {
        out.add(java.net.URLDecoder.decode(f[3], java.nio.charset.StandardCharsets.UTF_8));
      }
    }
    return out;
  }

  @Test
  void aCreateCancelledWhileThePluginMakesIt_deletesTheDiskAgain_andADeleteCancelledMidCallDropsTheRecord()
      throws Exception {
    Node n0 = node(0, false);
    n0.registry().register(info(PluginType.CSI_CONTROLLER, n0.socket(), ""));
    CompletableFuture<Void> cloudAnswers = new CompletableFuture<>();
    java.util.concurrent.atomic.AtomicReference<CompletableFuture<Void>> deleteAnswers =
        new java.util.concurrent.atomic.AtomicReference<>(CompletableFuture.completedFuture(null));
    Scripted client = new Scripted(n0.client()) {
      @Override
      public CompletableFuture<dev.csisupervisor.client.CsiVolume> createVolumeAsync(CreateVolumeRequest r) {
        return super.createVolumeAsync(r).thenCompose(v -> cloudAnswers.thenApply(x -> v)); // made, answered late
      }

      @Override
      public CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets) {
        CompletableFuture<Void> gate = deleteAnswers.get();
        return super.deleteVolumeAsync(volumeId, secrets).thenCompose(v -> gate);
      }
    };
    track(new ClusterController(n0.volumes(), "n0", n0.registry(), p -> client, Duration.ofMinutes(1),
        Optional.empty(), Clock.systemUTC())).start(Duration.ofMillis(100));
    ClusterVolumeRequest.Spec spec = new ClusterVolumeRequest.Spec(1 << 20, 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
    n0.volumes().requestCreate(ClusterVolumeRequest.create(PLUGIN, "unwanted", spec, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> diskNames().contains("unwanted"));
    assertTrue(n0.volumes().withdraw(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "unwanted"), "cancelled");
    cloudAnswers.complete(null);
    await().atMost(WAIT).until(() -> !diskNames().contains("unwanted"));
    assertTrue(n0.volumes().read().volumes().isEmpty(), "never registered");

    String vol = disk("doomed");
    CompletableFuture<Void> slowDelete = new CompletableFuture<>();
    deleteAnswers.set(slowDelete);
    n0.volumes().requestDelete(ClusterVolumeRequest.delete(PLUGIN, vol, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> !diskNames().contains("doomed")); // the plugin deleted it; its answer waits
    assertTrue(n0.volumes().withdraw(ClusterVolumeRequest.Kind.DELETE, PLUGIN, vol), "cancelled mid-call");
    slowDelete.complete(null);
    await().atMost(WAIT).until(() -> n0.volumes().volume(PLUGIN, vol).isEmpty());
  }

  @Test
  void requests_retriedAfterUnavailable_failedOnAFinalCode_andADeleteAnsweredNotFoundIsDone() throws Exception {
    Node n0 = node(0, false);
    n0.registry().register(info(PluginType.CSI_CONTROLLER, n0.socket(), ""));
    Scripted client = new Scripted(n0.client());
    client.createCodes.addAll(List.of(StatusCode.UNAVAILABLE, StatusCode.DEADLINE_EXCEEDED));
    ClusterController c = track(new ClusterController(n0.volumes(), "n0", n0.registry(), p -> client,
        Duration.ofSeconds(5), Optional.empty(), Clock.systemUTC(),
        new ClusterController.RequestRetry(Duration.ofMillis(100), Duration.ofMillis(200))));
    c.start(Duration.ofMillis(50));
    ClusterVolumeRequest.Spec spec = new ClusterVolumeRequest.Spec(1 << 20, 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of("type", "ssd"), List.of(), List.of());

    // Two uncertain answers: sent again after the retry delay, by the same name; the third makes the one volume.
    n0.volumes().requestCreate(ClusterVolumeRequest.create(PLUGIN, "retried", spec, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "retried")
        .orElseThrow().state() == ClusterVolumeRequest.State.DONE);
    ClusterVolumeRequest done = n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "retried").orElseThrow();
    assertEquals(3, done.attempts());
    assertEquals(3, client.creates.get());
    ClusterVolume made = n0.volumes().volume(PLUGIN, done.volumeId()).orElseThrow();
    assertEquals(1 << 20, made.capacityBytes());
    assertEquals(Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), made.accessModes());
    assertEquals(Map.of("type", "ssd"), made.parameters());
    assertEquals(1, c.counts().creates());

    // A final code fails the request, in the plugin's words; it is not sent again.
    client.createCodes.add(StatusCode.INVALID_ARGUMENT);
    n0.volumes().requestCreate(ClusterVolumeRequest.create(PLUGIN, "refused", spec, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "refused")
        .orElseThrow().state() == ClusterVolumeRequest.State.FAILED);
    ClusterVolumeRequest failed = n0.volumes().request(ClusterVolumeRequest.Kind.CREATE, PLUGIN, "refused").orElseThrow();
    assertTrue(failed.message().contains("INVALID_ARGUMENT") && failed.message().contains("scripted INVALID_ARGUMENT"),
        failed.message());
    assertEquals(1, failed.attempts());

    // A delete answered NOT_FOUND: already gone, so done; the volume's key and the create that made it go.
    client.deleteCodes.add(StatusCode.NOT_FOUND);
    n0.volumes().requestDelete(ClusterVolumeRequest.delete(PLUGIN, done.volumeId(), Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().volume(PLUGIN, done.volumeId()).isEmpty());
    assertTrue(n0.volumes().read().requests().stream().noneMatch(r -> r.name().equals("retried")
        || r.name().equals(done.volumeId())), n0.volumes().read().requests().toString());
    assertEquals(1, c.counts().deletes());
    assertEquals(Set.of(PLUGIN), c.leading(), "the controller agent of the plugin id");
  }
}
