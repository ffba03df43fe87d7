package dev.csisupervisor.agent.cluster;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumeRequest.State;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdDump;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.ForwardingCsiClient;
import dev.csisupervisor.client.ListSnapshotsRequest;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.ValidateCapabilitiesRequest;
import dev.csisupervisor.client.ValidationResult;
import dev.csisupervisor.mockplugin.MockCsiPlugin;
import dev.csisupervisor.mockplugin.MockMode;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import dev.csisupervisor.testing.ShortTempDir;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The controller agent's snapshots, restores, clones, modifies and validated registers (issue 37) on a real
 * three-member etcd, against the mock plugin as a cloud (its disks' bytes beside its file): each request asked as
 * the CLI asks it, acted on by a real {@link ClusterController}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ControllerRequestsAgentTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String PLUGIN = "cloudy";
  private static final Set<String> ALL = Set.of("CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME",
      "CREATE_DELETE_SNAPSHOT", "CLONE_VOLUME", "MODIFY_VOLUME", "LIST_SNAPSHOTS");
  private static int prefixes;

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/requests" + (++prefixes);
  private final Path cloudFile = tmp.resolve("cloud" + prefixes);
  private final List<AutoCloseable> closeables = new ArrayList<>();
  private ClusterVolumes volumes;
  private CsiClient plugin;
  private ClusterController controller;

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

  private EtcdOptions etcdOptions() {
    return EtcdOptions.of(etcd.endpoints().split(",")).withRequestTimeout(Duration.ofSeconds(2));
  }

  /**
   * Starts the mock plugin (configured by {@code mock}) and a controller agent whose controller registration offers
   * {@code capabilities}; {@code wrap} stands between the agent and the plugin.
   */
  private void start(UnaryOperator<MockCsiPlugin.Builder> mock, Set<String> capabilities,
      UnaryOperator<CsiClient> wrap) throws Exception {
    ShortTempDir dir = track(new ShortTempDir("cr"));
    Path socket = dir.resolve("csi").resolve(PLUGIN).resolve("csi.sock");
    Files.createDirectories(socket.getParent());
    track(mock.apply(MockCsiPlugin.builder().mode(MockMode.MONOLITH).socket(socket).allCapabilities().nodeId("csi-n0")
        .cloud(cloudFile, Duration.ofMillis(10)).dependentSnapshots().mutableParameters(List.of("iops")))
        .start());
    plugin = track(CsiClient.create(socket));
    PluginRegistry registry = track(PluginRegistry.builder().stateStore(new InMemoryStateStore()).build());
    Fingerprint f = new Fingerprint(PLUGIN, "1.0", Map.of(), Set.of("SERVICE:CONTROLLER_SERVICE"), capabilities,
        Set.of(), "", 0, Map.of());
    registry.register(new PluginInfo(PluginType.CSI_CONTROLLER, PLUGIN, "1.0", "alloc-c", socket, Map.of(), f,
        PluginHealth.healthy(Instant.now()), false));
    volumes = track(ClusterVolumes.builder().etcd(etcdOptions()).prefix(prefix).nodeId("n0")
        .leaseTtl(Duration.ofSeconds(2)).build());
    CsiClient client = wrap.apply(plugin);
    controller = track(new ClusterController(volumes, "n0", registry, p -> client, Duration.ofSeconds(10), Optional.empty(),
        Clock.systemUTC(), new ClusterController.RequestRetry(Duration.ofMillis(100), Duration.ofMillis(400))))
        .start(Duration.ofMillis(50));
  }

  private void start() throws Exception {
    start(b -> b, ALL, c -> c);
  }

  private ClusterVolumeRequest awaitState(Kind kind, String name, State state) {
    await().atMost(WAIT).until(() -> volumes.request(kind, PLUGIN, name).map(r -> r.state() == state).orElse(false));
    return volumes.request(kind, PLUGIN, name).orElseThrow();
  }

  private static final ClusterVolumeRequest.Spec RWO = new ClusterVolumeRequest.Spec(1 << 20, 0,
      Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());

  /** A volume created through the controller agent. */
  private ClusterVolume created(String name, ClusterVolumeRequest.Spec spec) throws Exception {
    volumes.ask(ClusterVolumeRequest.create(PLUGIN, name, spec, Optional.empty(), Instant.now()));
    ClusterVolumeRequest done = awaitState(Kind.CREATE, name, State.DONE);
    return volumes.volume(PLUGIN, done.volumeId()).orElseThrow();
  }

  private String snapshot(String name, String volumeId) throws Exception {
    volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, name, volumeId, Map.of(), Optional.empty(), Instant.now()));
    return awaitState(Kind.SNAPSHOT, name, State.DONE).volumeId();
  }

  /** The file a disk's bytes are in (the mock keeps them beside its cloud file). */
  private Path data(String volumeId) throws Exception {
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
        .digest(volumeId.getBytes(StandardCharsets.UTF_8)));
    Path dir = cloudFile.resolveSibling(cloudFile.getFileName() + ".data").resolve(sha);
    Files.createDirectories(dir);
    return dir.resolve("file");
  }

  private List<String> cloudSnapshots() throws Exception {
    return plugin.listSnapshotsAsync(ListSnapshotsRequest.all()).get(10, TimeUnit.SECONDS).entries().stream()
        .map(dev.csisupervisor.client.CsiSnapshot::snapshotId).toList();
  }

  @Test
  void aSnapshotRestoreAndClone_holdTheBytesWrittenBefore_andTheRecordsKeepTheirSources() throws Exception {
    start();
    ClusterVolume original = created("original", RWO);
    Files.writeString(data(original.volumeId()), "written before the snapshot");

    String snapshotId = snapshot("snap", original.volumeId());
    ClusterVolumeSnapshot recorded = volumes.snapshot(PLUGIN, snapshotId).orElseThrow();
    assertEquals("snap", recorded.name());
    assertEquals(original.volumeId(), recorded.sourceVolumeId());
    assertTrue(recorded.readyToUse());
    Files.writeString(data(original.volumeId()), "written after the snapshot");

    ClusterVolumeRequest.Spec noSize = new ClusterVolumeRequest.Spec(0, 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), false, "", Map.of(), List.of(), List.of());
    ClusterVolume restored = created("restored", noSize.from(VolumeSource.snapshot(snapshotId)));
    assertEquals("written before the snapshot", Files.readString(data(restored.volumeId())));
    assertEquals(Optional.of(VolumeSource.snapshot(snapshotId)), restored.source());
    assertEquals(recorded.sizeBytes(), restored.capacityBytes(), "the snapshot's size, asked with no size");

    ClusterVolume clone = created("clone", noSize.from(VolumeSource.volume(original.volumeId())));
    assertEquals("written after the snapshot", Files.readString(data(clone.volumeId())));
    assertEquals(Optional.of(VolumeSource.volume(original.volumeId())), clone.source());

    // The same name with another source is refused.
    VolumeStateException other = assertThrows(VolumeStateException.class, () -> volumes.ask(ClusterVolumeRequest
        .create(PLUGIN, "clone", noSize.from(VolumeSource.snapshot(snapshotId)), Optional.empty(), Instant.now())));
    assertTrue(other.getMessage().contains("other content"), other.getMessage());

    // A smaller size than its source is refused by the controller agent, naming both (CSI).
    ClusterVolumeRequest.Spec tiny = new ClusterVolumeRequest.Spec(1, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER),
        false, "", Map.of(), List.of(), List.of()).from(VolumeSource.snapshot(snapshotId));
    volumes.ask(ClusterVolumeRequest.create(PLUGIN, "tiny", tiny, Optional.empty(), Instant.now()));
    String why = awaitState(Kind.CREATE, "tiny", State.FAILED).message();
    assertTrue(why.contains("smaller than its source snapshot " + snapshotId), why);
  }

  @Test
  void aSnapshotNotReady_isSentAgainUntilReady_theCreateFromItWaitsSendingNothing_andDeletesWaitForThem()
      throws Exception {
    // Ready 4 s after the cut: the checks below, each an etcd round trip, run while it is not (a loaded machine).
    start(b -> b.snapshotReadyTime(Duration.ofSeconds(4)), ALL, c -> c);
    ClusterVolume source = created("source", RWO);
    volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, "slow", source.volumeId(), Map.of(), Optional.empty(),
        Instant.now()));
    await().atMost(WAIT).until(() -> !volumes.request(Kind.SNAPSHOT, PLUGIN, "slow").orElseThrow().volumeId()
        .isEmpty());
    ClusterVolumeRequest cut = volumes.request(Kind.SNAPSHOT, PLUGIN, "slow").orElseThrow();
    String id = cut.volumeId();
    assertEquals(State.PENDING, cut.state());
    assertTrue(cut.message().startsWith("cut at ") && cut.message().endsWith("not ready"), cut.message());
    assertFalse(volumes.snapshot(PLUGIN, id).orElseThrow().readyToUse(), "recorded at once, not ready");

    // While it is cut: the source's delete and the snapshot's delete are refused, naming why.
    VolumeStateException deleting = assertThrows(VolumeStateException.class, () -> volumes.requestDelete(
        ClusterVolumeRequest.delete(PLUGIN, source.volumeId(), Optional.empty(), Instant.now())));
    assertTrue(deleting.getMessage().contains("snapshot of it is being cut") && deleting.getMessage()
        .contains("snapshot of " + PLUGIN + "/slow"), deleting.getMessage());
    VolumeStateException notReady = assertThrows(VolumeStateException.class, () -> volumes.requestSnapshotDelete(
        ClusterVolumeRequest.deleteSnapshot(PLUGIN, id, Optional.empty(), Instant.now())));
    assertTrue(notReady.getMessage().contains("not ready yet"), notReady.getMessage());

    // A create from it waits, sending nothing, and says so.
    ClusterVolumeRequest.Spec fromIt = RWO.from(VolumeSource.snapshot(id));
    volumes.ask(ClusterVolumeRequest.create(PLUGIN, "restore", fromIt, Optional.empty(), Instant.now()));
    ClusterVolumeRequest restoreDone = awaitState(Kind.CREATE, "restore", State.DONE);
    ClusterVolumeRequest snapDone = awaitState(Kind.SNAPSHOT, "slow", State.DONE);
    assertTrue(snapDone.attempts() >= 2, "sent again until ready: " + snapDone.attempts());
    assertEquals(1, restoreDone.attempts(), "the create was sent once, when the snapshot was ready");
    assertTrue(volumes.snapshot(PLUGIN, id).orElseThrow().readyToUse());
    assertEquals(1, cloudSnapshots().size(), "one snapshot in the cloud: " + cloudSnapshots());

    // The snapshot's delete while a volume made from it stands: the plugin's FAILED_PRECONDITION, listing it.
    volumes.requestSnapshotDelete(ClusterVolumeRequest.deleteSnapshot(PLUGIN, id, Optional.empty(), Instant.now()));
    String inUse = awaitState(Kind.SNAPSHOT_DELETE, id, State.FAILED).message();
    assertTrue(inUse.contains("FAILED_PRECONDITION") && inUse.contains("volumes made from it: "
        + restoreDone.volumeId()), inUse);
    // Its restored volume deleted: the snapshot's delete asked again is done, its record and request gone.
    volumes.requestDelete(ClusterVolumeRequest.delete(PLUGIN, restoreDone.volumeId(), Optional.empty(),
        Instant.now()));
    await().atMost(WAIT).until(() -> volumes.volume(PLUGIN, restoreDone.volumeId()).isEmpty());
    volumes.requestSnapshotDelete(ClusterVolumeRequest.deleteSnapshot(PLUGIN, id, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> volumes.snapshot(PLUGIN, id).isEmpty());
    assertEquals(List.of(), cloudSnapshots());
    assertTrue(volumes.request(Kind.SNAPSHOT, PLUGIN, "slow").isEmpty(), "the done snapshot request went with it");
  }

  @Test
  void aSnapshotCancelledAfterItWasSent_leavesNothing_inTheCloudOrInEtcd() throws Exception {
    start(b -> b.snapshotTime(Duration.ofMillis(800)), ALL, c -> c);
    ClusterVolume source = created("source", RWO);
    volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, "unwanted", source.volumeId(), Map.of(), Optional.empty(),
        Instant.now()));
    await().atMost(WAIT).until(() -> volumes.request(Kind.SNAPSHOT, PLUGIN, "unwanted").orElseThrow().attemptStarted()
        .isPresent());
    assertTrue(volumes.withdraw(Kind.SNAPSHOT, PLUGIN, "unwanted"));
    assertEquals(State.CANCELLED, volumes.request(Kind.SNAPSHOT, PLUGIN, "unwanted").map(ClusterVolumeRequest::state)
        .orElse(State.CANCELLED), "kept as cancelled until undone");
    await().atMost(WAIT).until(() -> volumes.request(Kind.SNAPSHOT, PLUGIN, "unwanted").isEmpty());
    assertEquals(List.of(), cloudSnapshots(), "the snapshot it cut is deleted");
    assertEquals(List.of(), volumes.read().snapshots());
  }

  @Test
  void modify_mergesTheParametersItWasGiven_aKeyThePluginRefusesFailsIt_andTheRecordStays() throws Exception {
    start();
    ClusterVolume v = created("tuned", RWO.withMutableParameters(Map.of("iops", "100")));
    assertEquals(Map.of("iops", "100"), v.mutableParameters(), "sent at create");

    volumes.ask(ClusterVolumeRequest.modify(PLUGIN, v.volumeId(), Map.of("iops", "3000"), Optional.empty(),
        Instant.now()));
    awaitState(Kind.MODIFY, v.volumeId(), State.DONE);
    ClusterVolume modified = volumes.volume(PLUGIN, v.volumeId()).orElseThrow();
    assertEquals(Map.of("iops", "3000"), modified.mutableParameters());
    assertEquals(v.volumeContext(), modified.volumeContext(), "volume_context never changes");

    volumes.ask(ClusterVolumeRequest.modify(PLUGIN, v.volumeId(), Map.of("foo", "1"), Optional.empty(),
        Instant.now()));
    String why = awaitState(Kind.MODIFY, v.volumeId(), State.FAILED).message();
    assertTrue(why.contains("INVALID_ARGUMENT"), why);
    assertEquals(modified, volumes.volume(PLUGIN, v.volumeId()).orElseThrow(), "record unchanged");

    VolumeStateException gone = assertThrows(VolumeStateException.class, () -> volumes.ask(ClusterVolumeRequest
        .modify(PLUGIN, "no-such-volume", Map.of("iops", "1"), Optional.empty(), Instant.now())));
    assertTrue(gone.getMessage().contains("is not registered"), gone.getMessage());
  }

  /** A plugin answering ValidateVolumeCapabilities UNIMPLEMENTED (a driver that never wrote it). */
  private static final class NoValidation extends ForwardingCsiClient {
    private final CsiClient plugin;

    NoValidation(CsiClient plugin) {
      this.plugin = plugin;
    }

    @Override
    protected CsiClient delegate() {
      return plugin;
    }

    @Override
    public CompletableFuture<ValidationResult> validateVolumeCapabilitiesAsync(ValidateCapabilitiesRequest r) {
      return CompletableFuture.failedFuture(new CsiStatusException(Path.of("/scripted.sock"),
          "ValidateVolumeCapabilities", StatusCode.UNIMPLEMENTED, "not implemented"));
    }
  }

  @Test
  void register_validatedByThePlugin_anUnknownIdRefusedInItsWords() throws Exception {
    start();
    String disk = plugin.createVolumeAsync(new dev.csisupervisor.client.CreateVolumeRequest("existing",
        Optional.empty(), List.of(dev.csisupervisor.client.VolumeCapability.mount(
            dev.csisupervisor.client.AccessMode.SINGLE_NODE_WRITER)), Map.of(),
        dev.csisupervisor.client.Secrets.none())).get(10, TimeUnit.SECONDS).volumeId();
    ClusterVolume asked = new ClusterVolume(PLUGIN, disk, 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(),
        Map.of(), Map.of());
    volumes.ask(ClusterVolumeRequest.register(asked, false, "", Optional.empty(), Instant.now()));
    awaitState(Kind.REGISTER, disk, State.DONE);
    assertTrue(volumes.volume(PLUGIN, disk).orElseThrow().validated());

    ClusterVolume unknown = new ClusterVolume(PLUGIN, "vol-nobody-made", 0,
        Set.of(VolumeAccessMode.SINGLE_NODE_WRITER), List.of(), Map.of(), Map.of());
    volumes.ask(ClusterVolumeRequest.register(unknown, false, "", Optional.empty(), Instant.now()));
    String why = awaitState(Kind.REGISTER, "vol-nobody-made", State.FAILED).message();
    assertTrue(why.contains("NOT_FOUND"), why);
    assertTrue(volumes.volume(PLUGIN, "vol-nobody-made").isEmpty());

    VolumeStateException twice = assertThrows(VolumeStateException.class, () -> volumes.ask(
        ClusterVolumeRequest.register(asked, false, "", Optional.empty(), Instant.now())));
    assertTrue(twice.getMessage().contains("registered already"), twice.getMessage());
  }

  @Test
  void register_whereThePluginCannotValidate_isRegisteredMarkedNotValidated() throws Exception {
    start(b -> b, ALL, NoValidation::new);
    ClusterVolume asked = new ClusterVolume(PLUGIN, "vol-legacy", 0, Set.of(VolumeAccessMode.SINGLE_NODE_WRITER),
        List.of(), Map.of(), Map.of("k", "v"));
    volumes.ask(ClusterVolumeRequest.register(asked, false, "", Optional.empty(), Instant.now()));
    awaitState(Kind.REGISTER, "vol-legacy", State.DONE);
    ClusterVolume registered = volumes.volume(PLUGIN, "vol-legacy").orElseThrow();
    assertFalse(registered.validated());
    assertEquals(Map.of("k", "v"), registered.volumeContext());
  }

  @Test
  void aRequestThePluginDoesNotOffer_failsNamingTheCapability_andNoSecretValueIsEverInEtcd() throws Exception {
    start(b -> b, Set.of("CREATE_DELETE_VOLUME"), c -> c);
    Path secrets = tmp.resolve("secrets-" + prefixes + ".json");
    Files.writeString(secrets, "token=s3cr3t-value-42\n");
    volumes.ask(ClusterVolumeRequest.create(PLUGIN, "plain", RWO, Optional.of(secrets), Instant.now()));
    ClusterVolumeRequest done = awaitState(Kind.CREATE, "plain", State.DONE);
    volumes.ask(ClusterVolumeRequest.snapshot(PLUGIN, "snap", done.volumeId(), Map.of(), Optional.of(secrets),
        Instant.now()));
    String why = awaitState(Kind.SNAPSHOT, "snap", State.FAILED).message();
    assertTrue(why.contains("does not offer CREATE_DELETE_SNAPSHOT") && why.contains("it has: CREATE_DELETE_VOLUME"),
        why);
    assertEquals(0, why.indexOf("snapshot of " + PLUGIN + "/snap failed"), why);
    Map<String, String> all = EtcdDump.under(etcdOptions(), prefix + "/");
    assertFalse(all.isEmpty());
    all.forEach((k, v) -> assertFalse(v.contains("s3cr3t") || k.contains("s3cr3t"), k + " holds a secret: " + v));
  }

  /** A plugin whose CreateVolume answers only once the gate opens (made at once, answered late). */
  private static class LateCreates extends ForwardingCsiClient {
    private final CsiClient plugin;
    final CompletableFuture<Void> gate = new CompletableFuture<>();

    LateCreates(CsiClient plugin) {
      this.plugin = plugin;
    }

    @Override
    protected CsiClient delegate() {
      return plugin;
    }

    @Override
    public CompletableFuture<dev.csisupervisor.client.CsiVolume> createVolumeAsync(
        dev.csisupervisor.client.CreateVolumeRequest r) {
      return plugin.createVolumeAsync(r).thenCompose(v -> gate.thenApply(x -> v));
    }
  }

  private long disksNamed(String name) throws Exception {
    return Files.readAllLines(cloudFile).stream().filter(l -> l.startsWith("disk ") && l.endsWith(" " + name))
        .count();
  }

  @Test
  void aCreateCancelledInFlight_whoseSecretsFileIsGoneMeanwhile_isStillUndone_notFailed() throws Exception {
    LateCreates[] late = new LateCreates[1];
    start(b -> b, ALL, c -> late[0] = new LateCreates(c));
    Path secrets = tmp.resolve("gone-" + prefixes);
    Files.writeString(secrets, "token=x\n");
    volumes.ask(ClusterVolumeRequest.create(PLUGIN, "doomed", RWO, Optional.of(secrets), Instant.now()));
    await().atMost(WAIT).until(() -> disksNamed("doomed") == 1);
    Files.delete(secrets);
    assertTrue(volumes.withdraw(Kind.CREATE, PLUGIN, "doomed"));
    late[0].gate.complete(null);
    await().atMost(WAIT).until(() -> volumes.request(Kind.CREATE, PLUGIN, "doomed").isEmpty());
    assertEquals(0, disksNamed("doomed"), "the disk it made is deleted, not leaked");
    assertTrue(volumes.read().volumes().isEmpty());
  }

  @Test
  void aCancelledCreateWhoseNameThePluginWillNotMatch_staysCancelled_notTakenForNothingMade() throws Exception {
    java.util.concurrent.atomic.AtomicInteger creates = new java.util.concurrent.atomic.AtomicInteger();
    LateCreates[] late = new LateCreates[1];
    start(b -> b, ALL, c -> late[0] = new LateCreates(c) {
      @Override
      public CompletableFuture<dev.csisupervisor.client.CsiVolume> createVolumeAsync(
          dev.csisupervisor.client.CreateVolumeRequest r) {
        if (creates.incrementAndGet() > 1) { // the undo's: a plugin that will not match it (ALREADY_EXISTS)
          return CompletableFuture.failedFuture(new CsiStatusException(Path.of("/scripted.sock"), "CreateVolume",
              StatusCode.ALREADY_EXISTS, "a volume of that name exists with other parameters"));
        }
        return super.createVolumeAsync(r);
      }
    });
    volumes.ask(ClusterVolumeRequest.create(PLUGIN, "kept", RWO, Optional.empty(), Instant.now()));
    await().atMost(WAIT).until(() -> disksNamed("kept") == 1);
    assertTrue(volumes.withdraw(Kind.CREATE, PLUGIN, "kept"));
    Instant beforeTheUndo = Instant.now();
    late[0].gate.complete(null);
    await().atMost(WAIT).until(() -> volumes.request(Kind.CREATE, PLUGIN, "kept").orElseThrow().nextAttempt()
        .isPresent());
    ClusterVolumeRequest kept = volumes.request(Kind.CREATE, PLUGIN, "kept").orElseThrow();
    assertEquals(State.CANCELLED, kept.state(), "kept, for status to show: what the first call made is not known");
    assertTrue(kept.message().contains("ALREADY_EXISTS"), kept.message());
    // A later attempt, not one due at every round (each attempt moves it past the moment it was made).
    assertTrue(kept.nextAttempt().orElseThrow().isAfter(beforeTheUndo),
        "tried again on the request backoff, not every round: " + kept.nextAttempt());
    assertEquals(1, disksNamed("kept"));
  }
}
