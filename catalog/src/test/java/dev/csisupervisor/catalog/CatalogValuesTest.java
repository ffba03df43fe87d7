package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.Plugins.plugin;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Keys, options, the value codec and the aggregation: no etcd needed. */
class CatalogValuesTest {

  @Test
  void pluginKey_roundTrips_evenWithSlashInAllocId() {
    CatalogKeys k = CatalogKeys.of("/c");
    PluginKey key = new PluginKey(PluginType.CSI_NODE, "ebs", "alloc/with/slash");
    String s = k.pluginKey("node-1.example", key);
    assertEquals("/c/plugins/csi-node/ebs/node-1.example/alloc/with/slash", s);
    assertEquals(new CatalogKeys.PluginPath("node-1.example", key), k.parsePluginKey(s).orElseThrow());
    assertEquals("n1", k.parseNodeKey(k.nodeKey("n1")).orElseThrow());
    assertTrue(k.parsePluginKey("/c/plugins/bogus/ebs/n1/a").isEmpty());
    assertTrue(k.parsePluginKey("/c/plugins/csi-node/ebs").isEmpty());
  }

  @Test
  void badPrefixOrNodeId_namesTheField() {
    for (String bad : new String[] {"", "c", "/c/", "//c", "/c d", "/c/../x/"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CatalogKeys.of(bad));
      assertTrue(e.getMessage().startsWith("prefix "), e.getMessage());
    }
    for (String bad : new String[] {"", ".", "..", "a/b", "a b"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> CatalogKeys.checkNodeId(bad));
      assertTrue(e.getMessage().startsWith("nodeId "), e.getMessage());
    }
    assertThrows(IllegalArgumentException.class, () -> CatalogPublisher.builder().nodeId("x/y"));
  }

  @Test
  void endpoints_validatedWithTheirIndex() {
    assertEquals(List.of("http://127.0.0.1:2379", "https://h:1"),
        EtcdOptions.parseEndpoints("127.0.0.1:2379, https://h:1").stream().map(Object::toString).toList());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EtcdOptions.parseEndpoints(" "))
        .getMessage().startsWith("endpoints must not be empty"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EtcdOptions.parseEndpoints("h:1,,h:2"))
        .getMessage().startsWith("endpoints[1] "));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EtcdOptions.parseEndpoints("ftp://h:1"))
        .getMessage().startsWith("endpoints[0] 'ftp://h:1' must be http"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EtcdOptions.parseEndpoints("http://h"))
        .getMessage().contains("needs a host and a port"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new EtcdOptions(List.of(), null, null, null, null, null,
        Duration.ofSeconds(1))).getMessage().startsWith("endpoints must not be empty"));
    var eps = EtcdOptions.parseEndpoints("h:1");
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new EtcdOptions(eps, null, Path.of("c.pem"), null, null,
        null, Duration.ofSeconds(1))).getMessage().startsWith("keyFile is required"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new EtcdOptions(eps, null, null, null, "u", null,
        Duration.ofSeconds(1))).getMessage().startsWith("password is required"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> new EtcdOptions(eps, null, null, null, null, null,
        Duration.ZERO)).getMessage().startsWith("requestTimeout"));
    var withPassword = new EtcdOptions(eps, null, null, null, "u", "secret", Duration.ofSeconds(1));
    assertTrue(!withPassword.toString().contains("secret"));
  }

  @Test
  void entry_roundTripsThroughJson() {
    CatalogEntry e = CatalogEntry.of("n1", plugin(PluginType.CSI_NODE, "ebs", "a1", false));
    ByteString json = CatalogCodec.encode(e);
    assertTrue(json.toStringUtf8().contains("\"topology\":{\"zone\":\"z1\"}"), json.toStringUtf8());
    assertEquals(e, CatalogCodec.decodeEntry(json));
    NodeEntry n = new NodeEntry("n1", "host", Instant.parse("2026-11-23T10:00:00Z"), 15);
    assertEquals(n, CatalogCodec.decodeNode(CatalogCodec.encode(n)));
  }

  @Test
  void badValue_isRejectedWithAReason() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CatalogCodec.decodeEntry(ByteString.copyFromUtf8("{not json")));
    assertTrue(e.getMessage().startsWith("not a catalog value"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> CatalogCodec.decodeEntry(ByteString.copyFromUtf8("{\"node\":\"n1\",\"type\":\"csi-node\",\"name\":\"ebs\"}")));
    assertTrue(e.getMessage().startsWith("bad catalog entry"), e.getMessage());
  }

  @Test
  void summary_countsNodesPerType_notAllocations() {
    List<CatalogEntry> entries = List.of(
        CatalogEntry.of("n1", plugin(PluginType.CSI_NODE, "ebs", "a1", true)),
        CatalogEntry.of("n1", plugin(PluginType.CSI_NODE, "ebs", "a2", false)),  // second alloc on n1
        CatalogEntry.of("n2", plugin(PluginType.CSI_NODE, "ebs", "a3", false)),
        CatalogEntry.of("n2", plugin(PluginType.CSI_CONTROLLER, "ebs", "a3", true)),
        CatalogEntry.of("n3", plugin(PluginType.CSI_NODE, "nfs", "a4", true)));
    ClusterSnapshot s = new ClusterSnapshot(7, Map.of(), entries);
    PluginSummary ebs = s.plugin("ebs").orElseThrow();
    assertEquals(List.of(1, 1, 1, 2), List.of(ebs.controllersHealthy(), ebs.controllersExpected(), ebs.nodesHealthy(), ebs.nodesExpected()));
    assertEquals(4, ebs.entries().size());
    assertEquals(List.of("ebs", "nfs"), s.plugins().stream().map(PluginSummary::name).toList());
    assertEquals(List.of("ebs"), s.plugins(PluginType.CSI_CONTROLLER).stream().map(PluginSummary::name).toList());
    assertEquals(List.of("n1", "n2", "n3"), List.copyOf(s.nodeIds()));
    assertTrue(s.plugin("none").isEmpty());
  }
}
