package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumeRequest.Spec;
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
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Create and delete requests on a real three-member etcd: asked (idempotent by name), acted on by the elected
 * controller agent only, their outcome written with the volume in one transaction, a delete refused while the
 * volume is claimed and refusing claims while asked; and bad input, named field by field.
 */
class ClusterVolumeRequestsTest {
  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static final String PLUGIN = "disk.csi";
  private static final Instant NOW = Instant.parse("2026-11-26T09:00:00Z");

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/cvr" + PREFIXES.incrementAndGet();
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
    assertTrue(other.getMessage().contains("create of disk.csi/web-data is asked already with other content"),
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
  void badInput_isNamedFieldByField() {
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
    IllegalArgumentException x = assertThrows(IllegalArgumentException.class, e);
    assertTrue(x.getMessage().contains(part), x.getMessage());
  }
}
