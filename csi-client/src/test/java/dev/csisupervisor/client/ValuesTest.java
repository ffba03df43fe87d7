package dev.csisupervisor.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The value records: validated, immutable, compared by content. */
class ValuesTest {

  @Test
  void options_defaults() {
    assertEquals(Duration.ofSeconds(5), CsiClientOptions.defaults().callTimeout());
    assertEquals(4 * 1024 * 1024, CsiClientOptions.defaults().maxInboundMessageBytes());
  }

  @Test
  void options_rejectNonPositiveValues_namingTheField() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CsiClientOptions.defaults().withCallTimeout(Duration.ZERO));
    assertEquals("callTimeout must be positive, got PT0S", e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> CsiClientOptions.defaults().withMaxInboundMessageBytes(-1));
    assertEquals("maxInboundMessageBytes must be positive, got -1", e.getMessage());
    assertThrows(NullPointerException.class, () -> CsiClientOptions.defaults().withCallTimeout(null));
  }

  @Test
  void fingerprint_copiesItsCollections() {
    Map<String, String> manifest = new HashMap<>(Map.of("k", "v"));
    Set<String> caps = new HashSet<>(Set.of("SERVICE:CONTROLLER_SERVICE"));
    PluginFingerprint fp = new PluginFingerprint("n", "1", manifest, caps, Set.of(), Set.of(), "", 0, Map.of());
    manifest.put("k2", "v2");
    caps.add("X");
    assertEquals(Map.of("k", "v"), fp.manifest());
    assertEquals(Set.of("SERVICE:CONTROLLER_SERVICE"), fp.pluginCapabilities());
    assertThrows(UnsupportedOperationException.class, () -> fp.manifest().put("a", "b"));
    assertThrows(UnsupportedOperationException.class, () -> fp.pluginCapabilities().add("a"));
  }

  @Test
  void fingerprint_rejectsBadFields_namingThem() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new PluginFingerprint(" ", "1", Map.of(), Set.of(), Set.of(), Set.of(), "", 0, Map.of()));
    assertEquals("name must not be blank, got ' '", e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> new PluginFingerprint("n", "1", Map.of(), Set.of(), Set.of(), Set.of(), "n1", -1, Map.of()));
    assertEquals("maxVolumesPerNode must not be negative, got -1", e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> new PluginFingerprint("n", "1", Map.of(), Set.of(""), Set.of(), Set.of(), "", 0, Map.of()));
    assertEquals("pluginCapabilities must not contain null or blank entries, got []", e.getMessage());
    assertThrows(NullPointerException.class,
        () -> new PluginFingerprint("n", null, Map.of(), Set.of(), Set.of(), Set.of(), "", 0, Map.of()));
  }

  @Test
  void fingerprint_fromParts_andBack() {
    CsiPluginInfo info = new CsiPluginInfo("n", "1", Map.of("a", "b"));
    CsiNodeInfo node = new CsiNodeInfo("node-1", 8, Map.of("zone", "z"));
    PluginFingerprint fp = PluginFingerprint.of(info, Set.of(), Set.of(), Set.of("GET_VOLUME_STATS"), Optional.of(node));
    assertEquals(info, fp.pluginInfo());
    assertEquals(Optional.of(node), fp.nodeInfo());
    assertEquals(Set.of("GET_VOLUME_STATS"), fp.nodeCapabilities());
    PluginFingerprint controller = PluginFingerprint.of(info, Set.of(), Set.of(), Set.of(), Optional.empty());
    assertEquals("", controller.nodeId());
    assertEquals(Optional.empty(), controller.nodeInfo());
  }

  @Test
  void nodeInfo_rejectsBlankId() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CsiNodeInfo("", 0, Map.of()));
    assertEquals("nodeId must not be blank, got ''", e.getMessage());
  }

  @Test
  void statusCode_matchesGrpcNumbering() {
    for (io.grpc.Status.Code code : io.grpc.Status.Code.values()) {
      StatusCode ours = StatusCode.of(code.value());
      assertEquals(code.name(), ours.name());
      assertEquals(code.value(), ours.value());
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> StatusCode.of(17));
    assertEquals("value must be a gRPC status code 0..16, got 17", e.getMessage());
  }
}
