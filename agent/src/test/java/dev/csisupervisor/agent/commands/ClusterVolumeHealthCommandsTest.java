package dev.csisupervisor.agent.commands;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.ControllerLeaks;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.VolumeCondition;
import dev.csisupervisor.catalog.testing.EtcdCluster;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cluster volume capacity} and the checks' findings in {@code cluster volume status}, against a real etcd whose
 * catalog entries and readings are written as an agent and its controller agent would.
 */
@Timeout(60)
class ClusterVolumeHealthCommandsTest {
  private static final String PLUGIN = "ebs";
  private static final Instant T0 = Instant.parse("2026-11-27T12:00:00Z");
  private static int prefixes;

  @TempDir
  static Path tmp;

  static EtcdCluster etcd;

  private final String prefix = "/cli" + (++prefixes);
  private final List<AutoCloseable> closeables = new ArrayList<>();

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

  private EtcdOptions etcdOptions() {
    return EtcdOptions.of(etcd.member(0).endpoint()).withRequestTimeout(Duration.ofSeconds(2));
  }

  /** A node whose agent publishes a controller of the plugin with these capabilities. */
  private void controllerOn(String node, boolean healthy, String... capabilities) throws Exception {
    PluginRegistry registry = PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
    closeables.add(registry);
    Fingerprint f = new Fingerprint(PLUGIN, "1.0", Map.of(), Set.of("SERVICE:CONTROLLER_SERVICE"),
        Set.of(capabilities), Set.of(), "", 0, Map.of());
    registry.register(new PluginInfo(PluginType.CSI_CONTROLLER, PLUGIN, "1.0", "alloc-" + node,
        Path.of("/csi/" + node + "/csi.sock"), Map.of(), f,
        healthy ? PluginHealth.healthy(T0) : PluginHealth.unhealthy("probe failed", T0), false));
    CatalogPublisher p = CatalogPublisher.builder().registry(registry).etcd(etcdOptions()).prefix(prefix).nodeId(node)
        .leaseTtl(Duration.ofSeconds(3)).backoff(Duration.ofMillis(100), Duration.ofMillis(500)).build();
    closeables.add(p);
    p.start();
    assertTrue(p.awaitInSync(Duration.ofSeconds(30)), "publisher in sync");
  }

  private ClusterVolumes volumes() {
    ClusterVolumes v = ClusterVolumes.builder().etcd(etcdOptions()).prefix(prefix).nodeId("c1").build();
    closeables.add(v);
    return v;
  }

  private record Result(int code, String out, String err) {}

  private Result csiAgent(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(List.of("--endpoints", etcd.member(0).endpoint(), "--prefix", prefix));
    String[] a = all.toArray(String[]::new);
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = CsiAgentCommand.commandLine(new PrintWriter(out, true), new PrintWriter(err, true), a).execute(a);
    return new Result(code, out.toString(), err.toString());
  }

  @Test
  void capacity_refusedWhenNoHealthyControllerOffersGetCapacity_namingWhatEachHas() throws Exception {
    controllerOn("n1", true, "CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME");
    controllerOn("n2", false, "CREATE_DELETE_VOLUME", "GET_CAPACITY");
    Result r = csiAgent("cluster", "volume", "capacity", PLUGIN);
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("no healthy controller of plugin ebs offers GET_CAPACITY (n1: CREATE_DELETE_VOLUME, "
        + "PUBLISH_UNPUBLISH_VOLUME; n2: unhealthy (probe failed))"), r.err());
    assertEquals("", r.out());
  }

  @Test
  void capacity_ofAnUnknownPlugin_isABadArgument() {
    Result r = csiAgent("cluster", "volume", "capacity", "nope");
    assertNotEquals(0, r.code());
    assertTrue(r.err().contains("PLUGIN: no controller plugin 'nope'"), r.err());
    r = csiAgent("cluster", "volume", "capacity", "../x");
    assertNotEquals(0, r.code());
    assertTrue(r.err().contains("PLUGIN"), r.err());
  }

  @Test
  void capacity_showsTheReadingsPerSegment_asJson() throws Exception {
    controllerOn("n1", true, "CREATE_DELETE_VOLUME", "GET_CAPACITY");
    ClusterVolumes v = volumes();
    ClusterVolumes.Leadership l = v.lead(PLUGIN).orElseThrow();
    v.writeCapacity(l, PLUGIN, List.of(new CapacityReading(PLUGIN, Map.of("zone", "a"), List.of(
        new CapacityReading.Entry(Map.of(), 5L << 30, OptionalLong.of(1L << 30)),
        new CapacityReading.Entry(Map.of("type", "gp3"), 4L << 30, OptionalLong.empty())), T0)));
    Result r = csiAgent("cluster", "volume", "capacity", PLUGIN, "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode j = new ObjectMapper().readTree(r.out());
    JsonNode seg = j.get("segments").get(0);
    assertEquals("zone%3Da", seg.get("segment").asText());
    assertEquals(5L << 30, seg.get("entries").get(0).get("available_bytes").asLong());
    assertEquals(1L << 30, seg.get("entries").get(0).get("maximum_volume_size").asLong());
    assertEquals("gp3", seg.get("entries").get(1).get("parameters").get("type").asText());
    Result text = csiAgent("cluster", "volume", "capacity", PLUGIN);
    assertTrue(text.out().contains("{zone=a}") && text.out().contains(String.valueOf(4L << 30)), text.out());
  }

  @Test
  void status_showsAbnormalAndMissingVolumes_andTheLeaks() throws Exception {
    ClusterVolumes v = volumes();
    v.register(new ClusterVolume(PLUGIN, "vol-1", 0, Set.of(), List.of(), Map.of(), Map.of()));
    v.register(new ClusterVolume(PLUGIN, "vol-2", 0, Set.of(), List.of(), Map.of(), Map.of()));
    ClusterVolumes.Leadership l = v.lead(PLUGIN).orElseThrow();
    v.writeConditions(l, PLUGIN, List.of(
        new VolumeCondition(PLUGIN, "vol-1", VolumeCondition.Kind.ABNORMAL, "I/O errors", T0),
        new VolumeCondition(PLUGIN, "vol-2", VolumeCondition.Kind.MISSING, "ListVolumes does not list it", T0)));
    v.writeLeaks(l, new ControllerLeaks(PLUGIN, List.of("vol-9"), List.of(), List.of(), List.of(), T0));

    Result r = csiAgent("cluster", "volume", "status");
    assertEquals(0, r.code(), r.toString());
    assertTrue(r.out().contains("ebs/vol-1 ABNORMAL since 2026-11-27T12:00:00Z: I/O errors"), r.out());
    assertTrue(r.out().contains("ebs/vol-2 MISSING since"), r.out());
    assertTrue(r.out().contains("LEAKED: plugin ebs has volumes no record names: [vol-9]"), r.out());

    JsonNode j = new ObjectMapper().readTree(csiAgent("cluster", "volume", "status", PLUGIN, "vol-1", "--json").out());
    assertEquals(1, j.get("conditions").size(), j.toString());
    assertEquals("ABNORMAL", j.get("conditions").get(0).get("condition").asText());
    assertEquals("I/O errors", j.get("conditions").get(0).get("message").asText());
  }
}
