package dev.csisupervisor.agent.cluster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.ClaimRequest;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeCondition;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumePage;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The controller agent's checks on a real etcd with real mock plugins sharing a cloud file: a disk the cloud marks
 * abnormal, removes, or has unregistered; an attachment the cloud lost; capacity per pool; ListVolumes ABORTED between
 * pages. The checks run only when a test asks ({@link ControllerChecks#checkNow}: the interval is an hour), on a fixed
 * clock, so what they write is exact.
 */
@Timeout(120)
class ControllerChecksTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String PLUGIN = "mono";
  private static final VolumeCapability RWO = VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER);
  private static final Instant T0 = Instant.parse("2026-11-27T12:00:00Z");
  private static final String POOL = "topology.mock.csi.dev/pool";
  private static int prefixes;

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/checks" + (++prefixes);
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final Path cloudFile = tmp.resolve("cloud" + prefixes);
  private final List<Node> nodes = new ArrayList<>();
  /** Controller capabilities the next controller's registration leaves out (the plugin still has them). */
  private Set<String> withoutCapabilities = Set.of();

  @BeforeAll
  static void startEtcd() throws Exception {
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

  record Node(String id, PluginRegistry registry, ClusterVolumes volumes, CsiClient client,
      Optional<ClusterController> controller, MockCsiPlugin plugin) {
    ControllerChecks checks() {
      return controller.orElseThrow().checks().orElseThrow();
    }

    /** One check of every led plugin id, waited for. */
    ControllerChecks.Result check() throws Exception {
      return checks().checkNow().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  private Node node(int i, boolean controller) throws Exception {
    return node(i, controller, b -> {}, Map.of(), c -> c);
  }

  /**
   * @param plugin the mock's settings beyond the cloud
   * @param topology the node plugin's accessible topology (as NodeGetInfo would say it)
   * @param wrap the client the controller agent uses, made from the real one
   */
  private Node node(int i, boolean controller, Consumer<MockCsiPlugin.Builder> plugin, Map<String, String> topology,
      Function<CsiClient, CsiClient> wrap) throws Exception {
    String id = "n" + i;
    ShortTempDir dir = track(new ShortTempDir("cc" + i));
    Path socket = dir.resolve("csi").resolve("csi.sock");
    Files.createDirectories(socket.getParent());
    MockCsiPlugin.Builder b = MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities()
        .nodeId("csi-" + id).cloud(cloudFile, Duration.ofMillis(5));
    plugin.accept(b);
    MockCsiPlugin mock = track(b.start());
    CsiClient client = track(CsiClient.create(socket));
    Set<String> controllerCaps = new HashSet<>(client.controllerCapabilitiesAsync().get(10, TimeUnit.SECONDS));
    controllerCaps.removeAll(withoutCapabilities);
    Set<String> pluginCaps = client.pluginCapabilitiesAsync().get(10, TimeUnit.SECONDS);
    PluginRegistry registry = track(PluginRegistry.builder().stateStore(new InMemoryStateStore()).build());
    registry.register(info(PluginType.CSI_NODE, socket, "csi-" + id, pluginCaps, Set.of(), topology));
    if (controller) {
      registry.register(info(PluginType.CSI_CONTROLLER, socket, "", pluginCaps, controllerCaps, Map.of()));
    }
    CatalogPublisher publisher = track(CatalogPublisher.builder().registry(registry).etcd(etcdOptions())
        .prefix(prefix).nodeId(id).leaseTtl(Duration.ofSeconds(3)).backoff(Duration.ofMillis(100),
            Duration.ofMillis(500)).build());
    publisher.start();
    assertTrue(publisher.awaitInSync(WAIT), "publisher in sync");
    ClusterVolumes volumes = track(ClusterVolumes.builder().etcd(etcdOptions()).prefix(prefix).nodeId(id)
        .leaseTtl(Duration.ofSeconds(2)).build());
    ClusterController c = null;
    if (controller) {
      CsiClient used = wrap.apply(client);
      c = track(new ClusterController(volumes, id, registry, p -> used, Duration.ofSeconds(5), Optional.empty(),
          Clock.fixed(T0, ZoneOffset.UTC)));
      c.start(Duration.ofMillis(100)).checkEvery(Duration.ofHours(1));
      ClusterController started = c;
      await().atMost(WAIT).until(() -> started.leading().contains(PLUGIN));
    }
    Node n = new Node(id, registry, volumes, client, Optional.ofNullable(c), mock);
    nodes.add(n);
    return n;
  }

  private static EtcdOptions etcdOptions() {
    return EtcdOptions.of(etcd.member(0).endpoint()).withRequestTimeout(Duration.ofSeconds(2));
  }

  private static PluginInfo info(PluginType type, Path socket, String csiNodeId, Set<String> pluginCaps,
      Set<String> controllerCaps, Map<String, String> topology) {
    Fingerprint f = new Fingerprint(PLUGIN, "1.0", Map.of(), pluginCaps, controllerCaps,
        type == PluginType.CSI_NODE ? Set.of("STAGE_UNSTAGE_VOLUME") : Set.of(), csiNodeId, 0, topology);
    return new PluginInfo(type, PLUGIN, "1.0", "alloc-" + type.id(), socket, Map.of(), f,
        PluginHealth.healthy(Instant.now()), false);
  }

  /** A disk made in the cloud (not through the cluster). */
  private String cloudDisk(String name, long bytes) throws Exception {
    return nodes.get(0).client().createVolumeAsync(new CreateVolumeRequest(name,
        Optional.of(new CapacityRange(bytes, 0)), List.of(RWO), Map.of(), Secrets.none()))
        .get(10, TimeUnit.SECONDS).volumeId();
  }

  /** A disk made in the cloud and registered in the cluster. */
  private String disk(String name) throws Exception {
    String id = cloudDisk(name, 1 << 20);
    register(id);
    return id;
  }

  /**
   * Registers a disk, and waits until the controller agent's watch-fed mirror has it (its checks read the mirror,
   * which follows etcd a moment later).
   */
  private void register(String id) throws Exception {
    ClusterVolumes v = nodes.get(0).volumes();
    v.register(new ClusterVolume(PLUGIN, id, 0, Set.of(), List.of(), Map.of(), Map.of()));
    await().atMost(WAIT).until(() -> v.read().volumes().stream().anyMatch(x -> x.volumeId().equals(id)));
  }

  /** The mock's operator commands on the cloud file, as a separate program ({@code csi-mock-plugin cloud-...}). */
  private void cloud(String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        "dev.csisupervisor.mockplugin.MockCsiPlugin"));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "csi-mock-plugin " + args[0] + " finished");
    String out = new String(p.getInputStream().readAllBytes());
    assertEquals(0, p.exitValue(), out);
  }

  /** The nodes the cloud has a disk attached to. */
  private Set<String> attachedTo(String volume) throws Exception {
    Set<String> out = new HashSet<>();
    for (String line : Files.readAllLines(cloudFile)) {
      String[] f = line.split(" ");
      if (f.length == 4 && f[0].equals("attached")
          && java.net.URLDecoder.decode(f[1], java.nio.charset.StandardCharsets.UTF_8).equals(volume)) {
        out.add(java.net.URLDecoder.decode(f[2], java.nio.charset.StandardCharsets.UTF_8));
      }
    }
    return out;
  }

  @Test
  void aDiskMarkedAbnormal_isAbnormalInThePluginsWords_aSecondRoundWritesNothing_andRecoveryDeletesTheKey()
      throws Exception {
    Node n0 = node(0, true);
    String vol = disk("sick");
    String fine = disk("fine");
    // All normal: only the capacity (one segment) is written, by this check or by the one the new volumes' count
    // started (whichever came first).
    assertEquals(0, n0.check().failed());
    assertEquals(Map.of(), n0.volumes().conditions(PLUGIN));
    assertEquals(1, n0.volumes().capacity(PLUGIN).size());
    assertEquals(CapacityReading.NO_TOPOLOGY, n0.volumes().capacity(PLUGIN).get(0).segmentKey());

    cloud("cloud-mark-abnormal", cloudFile.toString(), vol, "disk is read-only: I/O errors");
    ControllerChecks.Result first = n0.check();
    assertEquals(1, first.writes(), first.toString());
    VolumeCondition c = n0.volumes().conditions(PLUGIN).get(vol);
    assertEquals(new VolumeCondition(PLUGIN, vol, VolumeCondition.Kind.ABNORMAL, "disk is read-only: I/O errors",
        T0), c);
    assertEquals(Set.of(vol), n0.volumes().conditions(PLUGIN).keySet(), fine + " is normal");

    // Nothing changed: no etcd write at all (the revision stays).
    long revision = n0.volumes().read().revision();
    ControllerChecks.Result again = n0.check();
    assertEquals(new ControllerChecks.Result(1, 0, 0), again);
    assertEquals(revision, n0.volumes().read().revision(), "no etcd write");

    cloud("cloud-mark-abnormal", cloudFile.toString(), vol, "");
    assertEquals(1, n0.check().writes());
    assertEquals(Map.of(), n0.volumes().conditions(PLUGIN), "recovered: the key is gone");
  }

  @Test
  void aDiskRemovedFromTheCloud_isMissing() throws Exception {
    Node n0 = node(0, true);
    String vol = disk("doomed");
    cloud("cloud-remove", cloudFile.toString(), vol);
    n0.check();
    VolumeCondition c = n0.volumes().conditions(PLUGIN).get(vol);
    assertEquals(VolumeCondition.Kind.MISSING, c.kind(), String.valueOf(c));
    assertTrue(c.message().contains("ListVolumes"), c.message());
    assertTrue(n0.volumes().volume(PLUGIN, vol).isPresent(), "the record stays for the operator");
  }

  @Test
  void aDiskNoRecordNames_isALeak_seenTwice_andIsNotDeleted() throws Exception {
    Node n0 = node(0, true);
    String registered = disk("known");
    String stray = cloudDisk("stray", 1 << 20);
    n0.check();
    assertTrue(n0.volumes().leaks(PLUGIN).isEmpty(), "one sighting is not yet a leak (a create may be finishing)");
    n0.check();
    assertEquals(List.of(stray), n0.volumes().leaks(PLUGIN).orElseThrow().volumes());
    assertTrue(n0.client().controllerGetVolumeAsync(stray).get(10, TimeUnit.SECONDS) != null, "still in the cloud");
    assertTrue(n0.volumes().conditions(PLUGIN).isEmpty(), registered + " is fine");

    // Registered now: no longer a leak; the key goes.
    register(stray);
    n0.check();
    assertTrue(n0.volumes().leaks(PLUGIN).isEmpty());
  }

  @Test
  void anAttachmentTheCloudLost_isPublishedAgain() throws Exception {
    Node n0 = node(0, true);
    Node n1 = node(1, false);
    String vol = disk("lost");
    n1.volumes().claim(new ClaimRequest(PLUGIN, vol, "n1", "a1", VolumeAccessMode.SINGLE_NODE_WRITER, false, "csi-n1",
        Map.of()));
    await().atMost(WAIT).until(() -> n0.volumes().attachment(PLUGIN, vol, "n1")
        .map(a -> a.state() == dev.csisupervisor.catalog.ClusterAttachment.State.ATTACHED).orElse(false));
    assertEquals(Set.of("csi-n1"), attachedTo(vol));

    // The cloud loses the attachment behind the controller agent's back.
    n0.client().controllerUnpublishVolumeAsync(vol, "csi-n1", Secrets.none()).get(10, TimeUnit.SECONDS);
    assertEquals(Set.of(), attachedTo(vol));
    n0.check();
    assertEquals(Set.of("csi-n1"), attachedTo(vol), "published again");
    assertEquals(1, n0.checks().counts().republished());
    n0.check();
    assertEquals(1, n0.checks().counts().republished(), "listed again: nothing more");
    assertTrue(n0.volumes().leaks(PLUGIN).isEmpty(), "every publication is recorded");
  }

  @Test
  void capacity_perPoolSegment_fallsAfterACreate() throws Exception {
    Node n0 = node(0, true, b -> b.pools("fast=100Mi,slow=1Gi").accessibleTopology(Map.of(POOL, "fast")),
        Map.of(POOL, "fast"), c -> c);
    node(1, false, b -> b.pools("fast=100Mi,slow=1Gi").accessibleTopology(Map.of(POOL, "slow")),
        Map.of(POOL, "slow"), c -> c);
    n0.check();
    Map<String, Long> before = available(n0);
    assertEquals(Map.of("fast", 100L << 20, "slow", 1L << 30), before);

    // A volume registered: the controller round sees the count change and capacity is read again soon, unasked.
    String vol = cloudDisk("big", 10 << 20);
    n0.volumes().register(new ClusterVolume(PLUGIN, vol, 10 << 20, Set.of(), List.of(), Map.of(), Map.of()));
    await().atMost(WAIT).until(() -> available(n0).equals(Map.of("fast", 100L << 20, "slow", (1L << 30) - (10 << 20))));
    assertEquals(0, n0.check().writes(), "read again, unchanged: nothing written");
  }

  /** A client that keeps the topology of every CreateVolume the controller agent sends. */
  private static final class SeesCreates extends ForwardingCsiClient {
    private final CsiClient plugin;
    final List<Optional<dev.csisupervisor.client.TopologyRequirement>> topologies =
        new java.util.concurrent.CopyOnWriteArrayList<>();

    SeesCreates(CsiClient plugin) {
      this.plugin = plugin;
    }

    @Override
    protected CsiClient delegate() {
      return plugin;
    }

    @Override
    public java.util.concurrent.CompletableFuture<dev.csisupervisor.client.CsiVolume> createVolumeAsync(
        CreateVolumeRequest r) {
      topologies.add(r.accessibilityRequirements());
      return plugin.createVolumeAsync(r);
    }
  }

  @Test
  void aCreateWithNoTopology_prefersTheSegmentsWithRoomMostFirst_andOneTooBigFailsWithTheReadings() throws Exception {
    SeesCreates[] seen = new SeesCreates[1];
    Node n0 = node(0, true, b -> b.pools("fast=100Mi,slow=1Gi").accessibleTopology(Map.of(POOL, "fast")),
        Map.of(POOL, "fast"), c -> seen[0] = new SeesCreates(c));
    node(1, false, b -> b.pools("fast=100Mi,slow=1Gi").accessibleTopology(Map.of(POOL, "slow")),
        Map.of(POOL, "slow"), c -> c);
    n0.check();
    dev.csisupervisor.catalog.ClusterVolumeRequest.Spec mid = new dev.csisupervisor.catalog.ClusterVolumeRequest.Spec(
        50 << 20, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
    n0.volumes().ask(dev.csisupervisor.catalog.ClusterVolumeRequest.create(PLUGIN, "mid", mid, Optional.empty(),
        Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().request(dev.csisupervisor.catalog.ClusterVolumeRequest.Kind.CREATE,
        PLUGIN, "mid").orElseThrow().state() == dev.csisupervisor.catalog.ClusterVolumeRequest.State.DONE);
    assertEquals(List.of(Map.of(POOL, "slow"), Map.of(POOL, "fast")),
        seen[0].topologies.get(0).orElseThrow().preferred(), "both have room: the most first");

    dev.csisupervisor.catalog.ClusterVolumeRequest.Spec huge = new dev.csisupervisor.catalog.ClusterVolumeRequest.Spec(
        2L << 30, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
    n0.volumes().ask(dev.csisupervisor.catalog.ClusterVolumeRequest.create(PLUGIN, "huge", huge, Optional.empty(),
        Instant.now()));
    await().atMost(WAIT).until(() -> n0.volumes().request(dev.csisupervisor.catalog.ClusterVolumeRequest.Kind.CREATE,
        PLUGIN, "huge").orElseThrow().state() == dev.csisupervisor.catalog.ClusterVolumeRequest.State.FAILED);
    String why = n0.volumes().request(dev.csisupervisor.catalog.ClusterVolumeRequest.Kind.CREATE, PLUGIN, "huge")
        .orElseThrow().message();
    assertTrue(why.contains("RESOURCE_EXHAUSTED") && why.contains("capacity as last read: {" + POOL + "=")
        && why.contains("bytes free"), why);
    assertEquals(Optional.empty(), seen[0].topologies.get(1), "no segment has room: none preferred");
  }

  private static Map<String, Long> available(Node n) {
    Map<String, Long> out = new java.util.TreeMap<>();
    for (CapacityReading r : n.volumes().capacity(PLUGIN)) {
      out.put(r.topology().get(POOL), r.entry(Map.of()).orElseThrow().availableBytes());
    }
    return out;
  }

  @Test
  void listVolumesAbortedBetweenPages_isStartedOverFromTheFirstPage() throws Exception {
    AtomicInteger firstPages = new AtomicInteger();
    AtomicInteger aborted = new AtomicInteger();
    Node n0 = node(0, true, b -> {}, Map.of(), real -> new ForwardingCsiClient() {
      @Override
      protected CsiClient delegate() {
        return real;
      }

      @Override
      public CompletableFuture<VolumePage> listVolumesAsync(int maxEntries, Optional<String> startingToken) {
        if (startingToken.isEmpty()) {
          firstPages.incrementAndGet();
        } else if (aborted.getAndIncrement() == 0) {
          return CompletableFuture.failedFuture(new CsiStatusException(real.socket(), "ListVolumes",
              StatusCode.ABORTED, "starting_token is no longer valid"));
        }
        return real.listVolumesAsync(1, startingToken); // one volume per page: several pages
      }
    });
    List<String> vols = List.of(disk("p1"), disk("p2"), disk("p3"));
    ControllerChecks.Result r = n0.check();
    assertEquals(0, r.failed(), r.toString());
    assertEquals(2, firstPages.get(), "started over once");
    assertTrue(n0.volumes().conditions(PLUGIN).isEmpty(), vols + " all listed");
  }

  @Test
  void withGetVolumeButNoListVolumes_eachRegisteredVolumeIsAskedFor() throws Exception {
    withoutCapabilities = Set.of("LIST_VOLUMES", "LIST_VOLUMES_PUBLISHED_NODES");
    Node n0 = node(0, true);
    String sick = disk("sick");
    String gone = disk("gone");
    cloudDisk("unregistered", 1 << 20);
    cloud("cloud-mark-abnormal", cloudFile.toString(), sick, "bad blocks");
    cloud("cloud-remove", cloudFile.toString(), gone);
    n0.check();
    n0.check();
    Map<String, VolumeCondition> c = n0.volumes().conditions(PLUGIN);
    assertEquals(VolumeCondition.Kind.ABNORMAL, c.get(sick).kind());
    assertEquals("bad blocks", c.get(sick).message());
    assertEquals(VolumeCondition.Kind.MISSING, c.get(gone).kind());
    assertTrue(c.get(gone).message().startsWith("ControllerGetVolume: NOT_FOUND"), c.get(gone).message());
    assertTrue(n0.volumes().leaks(PLUGIN).isEmpty(), "without a list, no leak can be seen");
    assertEquals(4, n0.plugin().callCount(dev.csisupervisor.csi.v1.ControllerGrpc.getControllerGetVolumeMethod()),
        "one ControllerGetVolume per registered volume (2) and check (2)");
    assertEquals(0, n0.plugin().callCount(dev.csisupervisor.csi.v1.ControllerGrpc.getListVolumesMethod()));
  }

  @Test
  void aSnapshotNoRecordNames_andAPublicationNoAttachmentRecords_areReportedNotUndone() throws Exception {
    Node n0 = node(0, true);
    String vol = disk("src");
    String snap = n0.client().createSnapshotAsync(new dev.csisupervisor.client.CreateSnapshotRequest(vol, "snap-a",
        Map.of(), Secrets.none())).get(10, TimeUnit.SECONDS).snapshotId();
    n0.client().controllerPublishVolumeAsync(new dev.csisupervisor.client.ControllerPublishRequest(vol, "csi-n0", RWO,
        false, Secrets.none(), Map.of())).get(10, TimeUnit.SECONDS);
    n0.check();
    n0.check();
    dev.csisupervisor.catalog.ControllerLeaks leaks = n0.volumes().leaks(PLUGIN).orElseThrow();
    assertEquals(List.of(snap), leaks.snapshots());
    assertEquals(List.of(vol + "@csi-n0"), leaks.unrecordedPublications());
    assertEquals(List.of(), leaks.volumes());
    assertEquals(Set.of("csi-n0"), attachedTo(vol), "reported only: not unpublished");
    assertEquals(1, n0.checks().counts().unrecordedPublications());
    long revision = n0.volumes().read().revision();
    assertEquals(0, n0.check().writes(), "the same found again: nothing written");
    assertEquals(revision, n0.volumes().read().revision());
  }

  /**
   * A check over many volumes with nothing changed: no etcd write. The size is {@code -Dchecks.volumes=N} (default
   * 200; benchmarks/README.md's figure is 1 000); the times of the first and the repeated check are printed.
   */
  @Test
  void aCheckOverManyVolumes_withNothingChanged_makesNoEtcdWrite() throws Exception {
    int count = Integer.getInteger("checks.volumes", 200);
    Node n0 = node(0, true);
    List<CompletableFuture<dev.csisupervisor.client.CsiVolume>> made = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      made.add(n0.client().createVolumeAsync(new CreateVolumeRequest("many-" + i,
          Optional.of(new CapacityRange(1 << 20, 0)), List.of(RWO), Map.of(), Secrets.none())));
    }
    for (CompletableFuture<dev.csisupervisor.client.CsiVolume> f : made) {
      String id = f.get(60, TimeUnit.SECONDS).volumeId();
      n0.volumes().register(new ClusterVolume(PLUGIN, id, 1 << 20, Set.of(), List.of(), Map.of(), Map.of()));
    }
    await().atMost(WAIT).until(() -> n0.volumes().read().volumes().size() == count);
    long t0 = System.nanoTime();
    ControllerChecks.Result first = n0.check();
    long t1 = System.nanoTime();
    long revision = n0.volumes().read().revision();
    long requests = n0.volumes().etcdRequests();
    long t2 = System.nanoTime();
    ControllerChecks.Result again = n0.check();
    long t3 = System.nanoTime();
    long requestsOfTheCheck = n0.volumes().etcdRequests() - requests;
    System.out.printf("check over %d volumes: first %d ms (%d keys written), repeated %d ms (%d keys written, %d etcd "
        + "requests)%n", count, (t1 - t0) / 1_000_000, first.writes(), (t3 - t2) / 1_000_000, again.writes(),
        requestsOfTheCheck);
    assertEquals(0, first.failed(), first.toString());
    assertEquals(new ControllerChecks.Result(1, 0, 0), again);
    // The public hook (the benchmarks' and an operator's "check now") runs the same check and says the same.
    assertEquals(new ClusterController.CheckResult(1, 0, 0),
        n0.controller().orElseThrow().checkNow().get(WAIT.toSeconds(), TimeUnit.SECONDS));
    assertEquals(revision, n0.volumes().read().revision(), "no etcd write");
    assertTrue(n0.volumes().conditions(PLUGIN).isEmpty());
  }

  @Test
  void checkNow_withoutChecks_isRefused() throws Exception {
    Node n0 = node(0, false);
    try (ClusterController c = new ClusterController(n0.volumes(), "n0", n0.registry(), p -> n0.client(),
        Duration.ofSeconds(5), Optional.empty(), Clock.fixed(T0, ZoneOffset.UTC))) {
      IllegalStateException e = assertThrows(IllegalStateException.class, c::checkNow);
      assertTrue(e.getMessage().contains("checkEvery"), e.getMessage());
      c.checkEvery(Duration.ZERO);
      assertThrows(IllegalStateException.class, c::checkNow, "zero: no checks");
    }
  }

  @Test
  void aFailingPluginCall_skipsThePluginThisInterval_countedAndNothingWritten() throws Exception {
    Node n0 = node(0, true);
    String vol = disk("flaky");
    n0.check(); // the capacity, once
    cloud("cloud-mark-abnormal", cloudFile.toString(), vol, "slow I/O");
    n0.plugin().failCalls(dev.csisupervisor.csi.v1.ControllerGrpc.getListVolumesMethod(), io.grpc.Status.Code.INTERNAL,
        "backend down", 1);
    long revision = n0.volumes().read().revision();
    assertEquals(new ControllerChecks.Result(1, 0, 1), n0.check());
    assertEquals(revision, n0.volumes().read().revision(), "nothing written");
    String lastError = n0.controller().orElseThrow().counts().lastError();
    assertTrue(lastError.contains("check of plugin mono") && lastError.contains("backend down"), lastError);
    assertEquals(new ControllerChecks.Result(1, 1, 0), n0.check(), "the next interval checks again");
    assertEquals("slow I/O", n0.volumes().conditions(PLUGIN).get(vol).message());
  }
}
