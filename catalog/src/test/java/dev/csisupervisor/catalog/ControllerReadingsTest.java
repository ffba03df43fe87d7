package dev.csisupervisor.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.catalog.testing.EtcdCluster;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The controller agent's readings in a real etcd: written only where they change (counted in etcd requests and
 * revisions), conditional on the election key, read back for status, and bad input named.
 */
@Timeout(60)
class ControllerReadingsTest {
  private static final AtomicInteger PREFIXES = new AtomicInteger();
  private static final String PLUGIN = "disk.csi";
  private static final Instant T0 = Instant.parse("2026-11-27T10:00:00Z");

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/readings" + PREFIXES.incrementAndGet();
  private ClusterVolumes a;
  private ClusterVolumes b;

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

  private ClusterVolumes node(String id) {
    return ClusterVolumes.builder().etcd(EtcdOptions.of(etcd.member(0).endpoint())
        .withRequestTimeout(Duration.ofSeconds(2))).prefix(prefix).nodeId(id).leaseTtl(Duration.ofSeconds(2)).build();
  }

  @AfterEach
  void close() {
    if (a != null) {
      a.close();
    }
    if (b != null) {
      b.close();
    }
  }

  private static VolumeCondition abnormal(String vol, String message, Instant since) {
    return new VolumeCondition(PLUGIN, vol, VolumeCondition.Kind.ABNORMAL, message, since);
  }

  private long revision(ClusterVolumes v) {
    return v.read().revision();
  }

  @Test
  void conditions_writtenOnlyOnChange_keepTheirSince_andRecoveryDeletesTheKey() {
    a = node("n1");
    ClusterVolumes.Leadership l = a.lead(PLUGIN).orElseThrow();
    VolumeCondition bad = abnormal("vol-1", "I/O errors", T0);
    VolumeCondition gone = new VolumeCondition(PLUGIN, "projects/p/disks/d", VolumeCondition.Kind.MISSING,
        "not listed by ListVolumes", T0);
    assertEquals(2, a.writeConditions(l, PLUGIN, List.of(bad, gone)));
    assertEquals(Map.of("vol-1", bad, "projects/p/disks/d", gone), a.conditions(PLUGIN));

    // The same again, seen later: one read, no write, and the first since stays.
    long rev = revision(a);
    long requests = a.etcdRequests();
    assertEquals(0, a.writeConditions(l, PLUGIN, List.of(abnormal("vol-1", "I/O errors", T0.plusSeconds(60)), gone)));
    assertEquals(1, a.etcdRequests() - requests, "one read, nothing written");
    assertEquals(rev, revision(a), "etcd's revision did not move");
    assertEquals(T0, a.conditions(PLUGIN).get("vol-1").since());

    // Another message is a change; the volume that recovered loses its key.
    assertEquals(2, a.writeConditions(l, PLUGIN, List.of(abnormal("vol-1", "read-only", T0.plusSeconds(120)))));
    assertEquals(Map.of("vol-1", abnormal("vol-1", "read-only", T0.plusSeconds(120))), a.conditions(PLUGIN));
    assertEquals(1, a.writeConditions(l, PLUGIN, List.of()));
    assertEquals(Map.of(), a.conditions(PLUGIN));
  }

  @Test
  void aDeposedControllerAgent_writesNothing() {
    a = node("n1");
    b = node("n2");
    ClusterVolumes.Leadership l = a.lead(PLUGIN).orElseThrow();
    a.resign(l);
    assertTrue(b.lead(PLUGIN).isPresent());
    assertEquals(ControllerReadings.NOT_LEADING, a.writeConditions(l, PLUGIN, List.of(abnormal("v", "x", T0))));
    assertEquals(ControllerReadings.NOT_LEADING, a.writeLeaks(l, new ControllerLeaks(PLUGIN, List.of("v9"), List.of(),
        List.of(), List.of(), T0)));
    assertEquals(Map.of(), b.conditions(PLUGIN));
    assertEquals(Optional.empty(), b.leaks(PLUGIN));
  }

  @Test
  void leaks_writtenOnChange_andAnEmptyOneDeletesTheKey() {
    a = node("n1");
    ClusterVolumes.Leadership l = a.lead(PLUGIN).orElseThrow();
    ControllerLeaks leaks = new ControllerLeaks(PLUGIN, List.of("vol-9", "vol-8"), List.of("snap-1"), List.of(),
        List.of("vol-2@csi-n3"), T0);
    assertEquals(1, a.writeLeaks(l, leaks));
    assertEquals(List.of("vol-8", "vol-9"), a.leaks(PLUGIN).orElseThrow().volumes(), "sorted");
    long rev = revision(a);
    assertEquals(0, a.writeLeaks(l, new ControllerLeaks(PLUGIN, List.of("vol-8", "vol-9"), List.of("snap-1"),
        List.of(), List.of("vol-2@csi-n3"), T0.plusSeconds(60))));
    assertEquals(rev, revision(a));
    // A plugin id whose name the first one begins with is another key, untouched.
    ClusterVolumes.Leadership l2 = a.lead(PLUGIN + "2").orElseThrow();
    assertEquals(0, a.writeLeaks(l2, new ControllerLeaks(PLUGIN + "2", List.of(), List.of(), List.of(), List.of(), T0)));
    assertTrue(a.leaks(PLUGIN).isPresent());
    assertEquals(1, a.writeLeaks(l, new ControllerLeaks(PLUGIN, List.of(), List.of(), List.of(), List.of(), T0)));
    assertEquals(Optional.empty(), a.leaks(PLUGIN));
  }

  @Test
  void capacity_perSegment_rewrittenOnlyWhereItChanged_andAGoneSegmentDeleted() {
    a = node("n1");
    ClusterVolumes.Leadership l = a.lead(PLUGIN).orElseThrow();
    CapacityReading fast = new CapacityReading(PLUGIN, Map.of("topology.mock.csi.dev/pool", "fast"), List.of(
        new CapacityReading.Entry(Map.of(), 10 << 20, OptionalLong.empty()),
        new CapacityReading.Entry(Map.of("type", "ssd"), 10 << 20, OptionalLong.of(4 << 20))), T0);
    CapacityReading slow = new CapacityReading(PLUGIN, Map.of("topology.mock.csi.dev/pool", "slow"), List.of(
        new CapacityReading.Entry(Map.of(), 1 << 30, OptionalLong.empty())), T0);
    assertEquals(2, a.writeCapacity(l, PLUGIN, List.of(fast, slow)));
    assertEquals(List.of(fast, slow), a.capacity(PLUGIN));
    assertEquals("topology.mock.csi.dev%2Fpool%3Dfast", fast.segmentKey());

    long rev = revision(a);
    assertEquals(0, a.writeCapacity(l, PLUGIN, List.of(fast, slow)));
    assertEquals(rev, revision(a));
    CapacityReading fuller = new CapacityReading(PLUGIN, fast.topology(), List.of(
        new CapacityReading.Entry(Map.of(), 6 << 20, OptionalLong.empty())), T0.plusSeconds(5));
    assertEquals(2, a.writeCapacity(l, PLUGIN, List.of(fuller)), "fast rewritten, slow deleted");
    assertEquals(List.of(fuller), a.capacity(PLUGIN));
  }

  @Test
  void snapshotRecords_andNodePlugins_areRead() {
    a = node("n1");
    assertEquals(Set.of(), a.snapshotRecordIds(PLUGIN));
    assertEquals(List.of(), a.nodePluginsOf(PLUGIN));
  }

  @Test
  void badInput_isNamed() {
    a = node("n1");
    ClusterVolumes.Leadership l = a.lead(PLUGIN).orElseThrow();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.writeConditions(l, PLUGIN,
        List.of(new VolumeCondition("other", "v", VolumeCondition.Kind.MISSING, "", T0))));
    assertTrue(e.getMessage().contains("conditions[0].pluginId"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> a.writeConditions(l, PLUGIN,
        List.of(abnormal("v", "a", T0), abnormal("v", "b", T0))));
    assertTrue(e.getMessage().contains("conditions[1].volumeId"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> a.conditions("../x"));
    assertTrue(e.getMessage().contains("pluginId"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new CapacityReading.Entry(Map.of(), -1,
        OptionalLong.empty()));
    assertTrue(e.getMessage().contains("availableBytes"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new ControllerLeaks(PLUGIN, List.of(" "), List.of(),
        List.of(), List.of(), T0));
    assertTrue(e.getMessage().contains("volumes[0]"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new VolumeCondition(PLUGIN, "v",
        VolumeCondition.Kind.ABNORMAL, null, T0));
    assertTrue(e.getMessage().contains("message"), e.getMessage());
  }

  @Test
  void segmentsWithRoom_mostFirst_leavingOutFullOnesAndTooSmallMaximums() {
    Map<String, String> a = Map.of("zone", "a");
    Map<String, String> b = Map.of("zone", "b");
    Map<String, String> c = Map.of("zone", "c");
    Map<String, String> ssd = Map.of("type", "ssd");
    List<CapacityReading> readings = List.of(
        new CapacityReading(PLUGIN, a, List.of(new CapacityReading.Entry(Map.of(), 100, OptionalLong.empty())), T0),
        new CapacityReading(PLUGIN, b, List.of(new CapacityReading.Entry(Map.of(), 500, OptionalLong.empty()),
            new CapacityReading.Entry(ssd, 5, OptionalLong.empty())), T0),
        new CapacityReading(PLUGIN, c, List.of(new CapacityReading.Entry(Map.of(), 900, OptionalLong.of(50))), T0),
        new CapacityReading(PLUGIN, Map.of(), List.of(new CapacityReading.Entry(Map.of(), 9999, OptionalLong.empty())),
            T0));
    assertEquals(List.of(b, a), CapacityReading.segmentsWithRoom(readings, Map.of(), 60), "c's volumes are too small");
    assertEquals(List.of(c, b, a), CapacityReading.segmentsWithRoom(readings, Map.of(), 10));
    assertEquals(List.of(c, a), CapacityReading.segmentsWithRoom(readings, ssd, 10),
        "b has no room for ssd; a and c answered only for none");
    assertEquals(List.of(), CapacityReading.segmentsWithRoom(readings, Map.of(), 1000));
    assertTrue(CapacityReading.describe(readings, ssd).startsWith("{zone=a}: 100 bytes free (read "),
        CapacityReading.describe(readings, ssd));
    assertTrue(CapacityReading.describe(readings, ssd).contains("{zone=b}: 5 bytes free"));
    assertThrows(IllegalArgumentException.class, () -> CapacityReading.segmentsWithRoom(readings, Map.of(), -1));
  }
}
