package dev.csisupervisor.agent.commands;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.agent.cluster.ClusterController;
import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.testing.EtcdProcess;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code csi-agent cluster volume snapshot|create --from-snapshot|--clone-of|modify|register|cancel} against a real
 * etcd: every refusal with nothing asked (capabilities first, bad input named by field), and end to end with a real
 * controller agent ({@link ClusterController}) acting on the requests through a mock plugin over real gRPC.
 */
class ClusterVolumeRequestsCommandTest {
  private static final String PREFIX = "/clireq";
  private static final Duration WAIT = Duration.ofSeconds(30);
  /** A controller that can only create, delete and publish volumes. */
  private static final String LACKING = "lacking.csi";
  /** A controller that offers everything (the mock's defaults and MODIFY_VOLUME), run by a controller agent. */
  private static final String FULL = "full.csi";
  /** The same, whose snapshots are ready 4 s after they are cut; the same controller agent. */
  private static final String SLOW = "slow.csi";
  private static final Set<String> EVERYTHING = Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME",
      "CREATE_DELETE_SNAPSHOT", "LIST_SNAPSHOTS", "CLONE_VOLUME", "MODIFY_VOLUME");

  @TempDir
  static Path tmp;

  static EtcdProcess etcd;
  static final List<AutoCloseable> closeables = new ArrayList<>();
  static ClusterVolumes reader;
  static CsiClient client;
  static MockCsiPlugin plugin;

  @BeforeAll
  static void start() throws Exception {
    etcd = EtcdProcess.start(tmp);
    reader = track(ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix(PREFIX).nodeId("reader")
        .build());
    // Node n9: a controller of LACKING in the catalog (no controller agent needed: nothing may be asked of it).
    PluginRegistry lacking = track(PluginRegistry.builder().stateStore(new InMemoryStateStore()).build());
    lacking.register(controller(LACKING, tmp.resolve("lacking.sock"),
        Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME")));
    publish("n9", lacking);
    // Node n0: a mock plugin with every controller capability, its registration, and its controller agent.
    ShortTempDir dir = track(new ShortTempDir("clireq"));
    Path socket = dir.resolve("csi.sock");
    plugin = track(MockCsiPlugin.builder().mode(MockMode.CONTROLLER).socket(socket).allCapabilities()
        .mutableParameters(List.of("iops")).snapshotTime(Duration.ofSeconds(4)).start()); // a cancel lands inside
    Path slowSocket = dir.resolve("slow.sock");
    track(MockCsiPlugin.builder().mode(MockMode.CONTROLLER).socket(slowSocket).allCapabilities()
        .snapshotReadyTime(Duration.ofSeconds(8)).start()); // a list and a create run before it is ready
    PluginRegistry full = track(PluginRegistry.builder().stateStore(new InMemoryStateStore()).build());
    full.register(controller(FULL, socket, EVERYTHING));
    full.register(controller(SLOW, slowSocket, EVERYTHING));
    publish("n0", full);
    client = track(CsiClient.create(socket));
    CsiClient slow = track(CsiClient.create(slowSocket));
    ClusterVolumes agent = track(ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.endpoint())).prefix(PREFIX)
        .nodeId("n0").leaseTtl(Duration.ofSeconds(3)).build());
    track(new ClusterController(agent, "n0", full, p -> p.name().equals(SLOW) ? slow : client,
        Duration.ofSeconds(10), Optional.empty(),
        Clock.systemUTC())).start(Duration.ofMillis(200));
  }

  @AfterAll
  static void stop() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    if (etcd != null) {
      etcd.close();
    }
  }

  private static <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  private static void publish(String node, PluginRegistry registry) throws InterruptedException {
    CatalogPublisher p = track(CatalogPublisher.builder().registry(registry).etcd(EtcdOptions.of(etcd.endpoint()))
        .prefix(PREFIX).nodeId(node).leaseTtl(Duration.ofSeconds(3))
        .backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build());
    p.start();
    assertTrue(p.awaitInSync(WAIT), "publisher of " + node + " in sync");
  }

  private static PluginInfo controller(String name, Path socket, Set<String> capabilities) {
    Fingerprint f = new Fingerprint(name, "1.0", Map.of(), Set.of("SERVICE:CONTROLLER_SERVICE"), capabilities,
        Set.of(), "", 0, Map.of());
    return new PluginInfo(PluginType.CSI_CONTROLLER, name, "1.0", "alloc-c", socket, Map.of(), f,
        PluginHealth.healthy(Instant.now()), false);
  }

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    String[] full = new String[args.length + 4];
    full[0] = "cluster";
    full[1] = "volume";
    System.arraycopy(args, 0, full, 2, args.length);
    full[args.length + 2] = "--endpoints=" + etcd.endpoint();
    full[args.length + 3] = "--prefix=" + PREFIX;
    int code = CsiAgentCommand.commandLine(new PrintWriter(out, true), new PrintWriter(err, true), full).execute(full);
    return new Run(code, out.toString(), err.toString());
  }

  private static void assertExit(int code, Run r, String message) {
    assertEquals(code, r.code(), r.out() + r.err());
    assertTrue(r.err().contains(message), r.err());
  }

  private static List<ClusterVolumeRequest> requestsOf(String pluginId) {
    return reader.read().requests().stream().filter(r -> r.pluginId().equals(pluginId)).toList();
  }

  /** What the first line of a successful command's output names after {@code word}. */
  private static String after(String out, String word) {
    String rest = out.substring(out.indexOf(word) + word.length()).strip();
    return rest.split("[ \n]")[0];
  }

  @Test
  @Timeout(60)
  void capabilitiesFirst_aControllerLackingWhatIsNeeded_refusedNamingEachNodeAndItsCapabilities_nothingAsked() {
    Run reg = run("register", LACKING, "disk-1", "--capacity", "1073741824", "--no-validate");
    assertEquals(0, reg.code(), reg.err());
    assertTrue(reg.out().contains("registered lacking.csi/disk-1, not validated (--no-validate)"), reg.out());
    String has = "(n9: CREATE_DELETE_VOLUME, PUBLISH_UNPUBLISH_VOLUME): nothing was asked";

    assertExit(1, run("snapshot", "create", LACKING, "s1", "--volume", "disk-1"), "csi-agent: snapshot of "
        + "lacking.csi/s1 refused: no healthy controller of plugin lacking.csi offers CREATE_DELETE_SNAPSHOT " + has);
    assertExit(1, run("create", LACKING, "c1", "--clone-of", "disk-1"),
        "no healthy controller of plugin lacking.csi offers CLONE_VOLUME and CREATE_DELETE_VOLUME " + has);
    assertExit(1, run("create", LACKING, "m1", "--size", "1MiB", "--mutable-parameter", "iops=100"),
        "no healthy controller of plugin lacking.csi offers CREATE_DELETE_VOLUME and MODIFY_VOLUME " + has);
    assertExit(1, run("modify", LACKING, "disk-1", "--mutable-parameter", "iops=100"),
        "no healthy controller of plugin lacking.csi offers MODIFY_VOLUME " + has);
    assertEquals(List.of(), requestsOf(LACKING), "nothing asked");
  }

  @Test
  @Timeout(60)
  void badInput_namedByField_nothingAsked() throws Exception {
    assertEquals(0, run("register", LACKING, "disk-2", "--capacity", "1073741824", "--no-validate").code());
    // A snapshot request written directly (the catalog does not check capabilities), never acted on: not cut yet.
    reader.ask(ClusterVolumeRequest.snapshot(LACKING, "uncut", "disk-2", Map.of(), Optional.empty(), Instant.now()));
    int before = requestsOf(LACKING).size();

    assertExit(2, run("snapshot", "create", LACKING, "", "--volume", "disk-2"), "NAME must not be empty");
    assertExit(2, run("snapshot", "create", LACKING, "s2"), "Missing required option: '--volume=VOLUME_ID'");
    assertExit(2, run("snapshot", "create", LACKING, "s2", "--volume", "disk-2", "--parameter", "noequals"),
        "--parameter");
    assertExit(2, run("snapshot", "delete", LACKING, ""), "ID_OR_NAME must not be empty");
    assertExit(2, run("snapshot", "list", "bad plugin"), "PLUGIN");
    assertExit(2, run("create", LACKING, "c2", "--from-snapshot", "x", "--clone-of", "disk-2"),
        "--from-snapshot and --clone-of exclude each other (a volume has one source)");
    assertExit(2, run("create", LACKING, "c2", "--clone-of", "disk-2", "--size", "1MiB"),
        "--size 1MiB is smaller than its source volume disk-2 (1.0 GiB)");
    assertExit(2, run("create", LACKING, "c2", "--clone-of", "nowhere"),
        "--clone-of: volume nowhere of plugin lacking.csi is not registered");
    assertExit(2, run("create", LACKING, "c2", "--from-snapshot", "never-cut"),
        "--from-snapshot: no snapshot of plugin lacking.csi has the id or name 'never-cut'");
    assertExit(1, run("create", LACKING, "c2", "--from-snapshot", "uncut"),
        "--from-snapshot: snapshot uncut of plugin lacking.csi is not cut yet");
    assertExit(2, run("create", LACKING, "c2", "--size", "1MiB", "--mutable-parameter", "=5"),
        "--mutable-parameter must be KEY=VALUE with a non-empty KEY");
    assertExit(2, run("modify", LACKING, "disk-2"), "Missing required option: '--mutable-parameter=KEY=VALUE'");
    assertExit(2, run("modify", LACKING, "disk-2", "--mutable-parameter", "iops"), "--mutable-parameter");
    assertExit(2, run("modify", LACKING, "", "--mutable-parameter", "iops=1"), "VOLUME_ID must not be empty");
    assertExit(2, run("register", LACKING, "disk-3"), "--access-mode: at least one is needed to validate");
    assertExit(2, run("register", LACKING, "disk-3", "--access-mode", "single-node-writer", "--block", "--fs-type",
        "ext4"), "--fs-type is for a file system, not with --block");
    assertExit(2, run("register", LACKING, "disk-3", "--capacity", "-1", "--no-validate"),
        "--capacity must not be negative");
    assertExit(2, run("cancel", "rename", LACKING, "x"), "KIND must be one of create, delete, snapshot, "
        + "snapshot-delete, modify or register, got 'rename'");
    assertExit(2, run("cancel", "snapshot", LACKING, ""), "NAME_OR_ID must not be empty");
    assertEquals(before, requestsOf(LACKING).size(), "nothing asked: " + requestsOf(LACKING));
    assertTrue(reader.volume(LACKING, "disk-3").isEmpty(), "nothing registered");
  }

  @Test
  @Timeout(60)
  void register_withoutAnyController_writtenNotValidated_andStatusSaysSo() {
    Run reg = run("register", "nocontroller.csi", "d-9", "--access-mode", "single-node-writer");
    assertEquals(0, reg.code(), reg.err());
    assertTrue(reg.out().contains("registered nocontroller.csi/d-9, not validated (no controller of plugin "
        + "nocontroller.csi in the cluster to validate it)"), reg.out());
    assertFalse(reader.volume("nocontroller.csi", "d-9").orElseThrow().validated());
    assertTrue(run("status", "nocontroller.csi").out().contains("nocontroller.csi/d-9 [SINGLE_NODE_WRITER] NOT "
        + "VALIDATED"));
    assertTrue(run("list").out().contains("NOT VALIDATED"));
    assertTrue(run("status", "--json").out().contains("\"validated\" : false"));
  }

  @Test
  @Timeout(120)
  void endToEnd_snapshotRestoreCloneModify_throughTheControllerAgent() throws Exception {
    Run made = run("create", FULL, "src", "--size", "2MiB");
    assertEquals(0, made.code(), made.err());
    String src = after(made.out(), "created volume");

    // A snapshot: progress while it is cut (the mock takes 1.5 s), then DONE with its id.
    Run snap = run("snapshot", "create", FULL, "snap-a", "--volume", src);
    assertEquals(0, snap.code(), snap.err());
    String id = after(snap.out(), "snapshot");
    assertTrue(snap.out().contains("of plugin full.csi cut from volume " + src + " as snap-a (2.0 MiB, ready) "
        + "through controller agent n0"), snap.out());
    assertTrue(snap.err().contains("csi-agent: snapshot of full.csi/snap-a: CreateSnapshot attempt 1 in flight on n0"),
        snap.err());
    ClusterVolumeSnapshot record = reader.snapshot(FULL, id).orElseThrow();
    assertEquals(src, record.sourceVolumeId());
    assertTrue(record.readyToUse());
    Run list = run("snapshot", "list", FULL, "--volume", src);
    assertTrue(list.out().contains(id) && list.out().contains("snap-a") && list.out().contains("2.0 MiB")
        && list.out().contains(" yes"), list.out());
    assertTrue(run("snapshot", "list", FULL, "--json").out().contains("\"readyToUse\" : true"));

    // Restored by the snapshot's name: its size without --size; a smaller --size refused naming both.
    assertExit(2, run("create", FULL, "small", "--from-snapshot", id, "--size", "1MiB"),
        "--size 1MiB is smaller than its source snapshot " + id + " (2.0 MiB)");
    Run restored = run("create", FULL, "restored", "--from-snapshot", "snap-a");
    assertEquals(0, restored.code(), restored.err());
    assertTrue(restored.out().contains("(2.0 MiB) of plugin full.csi as restored from snapshot " + id), restored.out());
    String restoredId = after(restored.out(), "created volume");
    assertEquals(Optional.of(dev.csisupervisor.catalog.VolumeSource.snapshot(id)),
        reader.volume(FULL, restoredId).orElseThrow().source());

    // A clone, with a mutable parameter at create.
    Run clone = run("create", FULL, "copy", "--clone-of", src, "--mutable-parameter", "iops=50");
    assertEquals(0, clone.code(), clone.err());
    ClusterVolume copy = reader.volume(FULL, after(clone.out(), "created volume")).orElseThrow();
    assertEquals(Map.of("iops", "50"), copy.mutableParameters());
    assertEquals(2L << 20, copy.capacityBytes());

    // Modify: done and merged; a key the plugin does not take fails in its words, the record unchanged.
    Run mod = run("modify", FULL, src, "--mutable-parameter", "iops=300");
    assertEquals(0, mod.code(), mod.err());
    assertTrue(mod.out().contains("mutable parameters now {iops=300}"), mod.out());
    Run bad = run("modify", FULL, src, "--mutable-parameter", "colour=red");
    assertExit(1, bad, "INVALID_ARGUMENT");
    assertTrue(bad.err().contains("colour") && bad.err().contains("(the volume's record is unchanged)"), bad.err());
    assertEquals(Map.of("iops", "300"), reader.volume(FULL, src).orElseThrow().mutableParameters());
    Run status = run("status", FULL, src);
    assertTrue(status.out().contains("mutable {iops=300}"), status.out());
    assertTrue(status.out().contains("modify of full.csi/" + src) && status.out().contains("failed:"), status.out());
    assertEquals("withdrew the modify of full.csi/" + src + "\n", run("cancel", "modify", FULL, src).out());

    // The snapshot deleted, by the name it was cut as: DeleteSnapshot of its id, then its record.
    Run del = run("snapshot", "delete", FULL, "snap-a");
    assertEquals(0, del.code(), del.err());
    assertEquals("deleted snapshot " + id + " of plugin full.csi\n", del.out());
    assertTrue(reader.snapshot(FULL, id).isEmpty());
  }

  @Test
  @Timeout(60)
  void register_validatedByTheControllerAgent_andAnUnknownIdRefusedInThePluginsWords() throws Exception {
    String disk = client.createVolumeAsync(new CreateVolumeRequest("existing", Optional.empty(),
        List.of(VolumeCapability.mount(AccessMode.SINGLE_NODE_WRITER)), Map.of(), Secrets.none()))
        .get(10, TimeUnit.SECONDS).volumeId();
    Run reg = run("register", FULL, disk, "--access-mode", "single-node-writer");
    assertEquals(0, reg.code(), reg.err());
    assertEquals("registered full.csi/" + disk + ", validated by controller agent n0\n", reg.out());
    assertTrue(reader.volume(FULL, disk).orElseThrow().validated());
    assertEquals(0, run("register", FULL, disk, "--access-mode", "single-node-writer").code(), "the same: no change");

    Run unknown = run("register", FULL, "no-such-disk", "--access-mode", "single-node-writer");
    assertExit(1, unknown, "NOT_FOUND");
    assertTrue(unknown.err().contains("no-such-disk") && unknown.err().contains("(nothing registered)"),
        unknown.err());
    assertTrue(reader.volume(FULL, "no-such-disk").isEmpty());
  }

  @Test
  @Timeout(60)
  void cancel_ofASentSnapshot_isCancelled_andTheControllerAgentDeletesWhatItCut() throws Exception {
    Run made = run("create", FULL, "to-cut", "--size", "1MiB");
    assertEquals(0, made.code(), made.err());
    String vol = after(made.out(), "created volume");
    long deletes = plugin.callCount(ControllerGrpc.getDeleteSnapshotMethod());
    Run asked = run("snapshot", "create", FULL, "doomed", "--volume", vol, "--wait", "0");
    assertEquals(0, asked.code(), asked.err());
    assertTrue(asked.out().startsWith("asked: snapshot of full.csi/doomed"), asked.out());
    await().atMost(WAIT).until(() -> reader.request(ClusterVolumeRequest.Kind.SNAPSHOT, FULL, "doomed")
        .map(r -> r.attemptStarted().isPresent()).orElse(false));

    Run cancel = run("cancel", "snapshot", FULL, "doomed");
    assertEquals(0, cancel.code(), cancel.err());
    assertTrue(cancel.out().startsWith("cancelled the snapshot of full.csi/doomed: it was sent, so its controller "
        + "agent learns by name what it made and deletes it"), cancel.out());
    await().atMost(WAIT).until(() -> reader.request(ClusterVolumeRequest.Kind.SNAPSHOT, FULL, "doomed").isEmpty());
    assertEquals(List.of(), reader.read().snapshots().stream().filter(s -> s.name().equals("doomed")).toList());
    assertEquals(deletes + 1, plugin.callCount(ControllerGrpc.getDeleteSnapshotMethod()),
        "the snapshot it cut deleted by its id");
    assertTrue(Files.exists(plugin.socket()));
  }

  @Test
  @Timeout(60)
  void createFromASnapshotNotReadyYet_isAsked_andSaysItWaitsForIt_thenIsMade() throws Exception {
    Run made = run("create", SLOW, "base", "--size", "1MiB");
    assertEquals(0, made.code(), made.err());
    String vol = after(made.out(), "created volume");
    assertEquals(0, run("snapshot", "create", SLOW, "later", "--volume", vol, "--wait", "0").code());
    await().atMost(WAIT).until(() -> reader.request(ClusterVolumeRequest.Kind.SNAPSHOT, SLOW, "later")
        .map(r -> !r.volumeId().isEmpty()).orElse(false));
    ClusterVolumeRequest cut = reader.request(ClusterVolumeRequest.Kind.SNAPSHOT, SLOW, "later").orElseThrow();
    assertEquals(ClusterVolumeRequest.State.PENDING, cut.state(), "cut, not ready: " + cut);
    Run list = run("snapshot", "list", SLOW);
    assertTrue(list.out().contains(cut.volumeId()) && list.out().matches("(?s).*" + cut.volumeId() + " .* no\n.*"),
        list.out());
    assertTrue(list.out().contains("requests:\n  snapshot of slow.csi/later asked ") && list.out().contains(
        ": snapshot " + cut.volumeId() + ": cut at "), list.out());
    assertTrue(list.out().contains(", not ready"), list.out());

    Run restored = run("create", SLOW, "from-later", "--from-snapshot", "later");
    assertEquals(0, restored.code(), restored.err());
    assertTrue(restored.err().contains("csi-agent: snapshot " + cut.volumeId() + " is not ready yet: the create "
        + "waits for it, sending nothing until it is"), restored.err());
    assertTrue(restored.out().contains("of plugin slow.csi as from-later from snapshot " + cut.volumeId()),
        restored.out());
    assertTrue(reader.snapshot(SLOW, cut.volumeId()).orElseThrow().readyToUse());
  }
}
