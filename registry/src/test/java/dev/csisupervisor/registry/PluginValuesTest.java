package dev.csisupervisor.registry;

import static dev.csisupervisor.registry.PluginRegistryContractTest.assertMessage;
import static dev.csisupervisor.registry.TestRegistrations.T0;
import static dev.csisupervisor.registry.TestRegistrations.node;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PluginValuesTest {

  private static PluginInfo withName(String name) {
    return new PluginInfo(PluginType.CSI_NODE, name, "1", "a1", Path.of("/s.sock"), Map.of(), Fingerprint.EMPTY,
        PluginHealth.healthy(T0), false);
  }

  private static PluginInfo withAlloc(String allocId) {
    return new PluginInfo(PluginType.CSI_NODE, "ebs", "1", allocId, Path.of("/s.sock"), Map.of(), Fingerprint.EMPTY,
        PluginHealth.healthy(T0), false);
  }

  @Test
  void pluginType_hasStableIds_andParseNamesBadValue() {
    assertEquals("csi-controller", PluginType.CSI_CONTROLLER.id());
    assertEquals("csi-node", PluginType.CSI_NODE.id());
    assertEquals(PluginType.CSI_NODE, PluginType.parse("csi-node"));
    assertEquals(PluginType.CSI_CONTROLLER, PluginType.parse("CSI_CONTROLLER"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PluginType.parse("csi-monolith"));
    assertTrue(e.getMessage().contains("'csi-monolith'") && e.getMessage().contains("expected one of csi-controller, csi-node"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> PluginType.parse(null));
  }

  @ParameterizedTest
  @ValueSource(strings = {"ebs", "a", "my.plugin-1_x", "..."})
  void validNames_areAccepted(String name) {
    assertEquals(name, withName(name).name());
  }

  @Test
  void longestValidName_is128Characters() {
    assertEquals(128, withName("x".repeat(128)).name().length());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", ".", "..", "a/b", "../etc", "has space", "ünï", "tab\there"})
  void badNames_areRejectedNamingTheValue(String name) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> withName(name));
    assertTrue(e.getMessage().startsWith("name must"), e.getMessage());
  }

  @Test
  void nameOver128Characters_isRejected() {
    assertMessage(assertThrows(IllegalArgumentException.class, () -> withName("x".repeat(129))), "name");
  }

  @Test
  void badAllocIds_areRejected() {
    assertMessage(assertThrows(IllegalArgumentException.class, () -> withAlloc(null)), "allocId");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> withAlloc("  ")), "allocId");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> withAlloc("a".repeat(129))), "allocId");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> withAlloc("a\nb"));
    assertTrue(e.getMessage().contains("control characters") && e.getMessage().contains("a\\u000ab"), e.getMessage());
    assertEquals("8f2c-4e1a/with slash", withAlloc("8f2c-4e1a/with slash").allocId());
  }

  @Test
  void nullFields_areRejectedNamingTheField() {
    PluginInfo ok = node("ebs", "a1");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> new PluginInfo(null, "ebs", "1", "a1", ok.socketPath(),
        Map.of(), Fingerprint.EMPTY, ok.health(), false)), "type");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withVersion(null)), "version");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withSocketPath(null)), "socketPath");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withSocketPath(Path.of(""))), "socketPath");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withOptions(null)), "options");
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("k", null);
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withOptions(nullValue)), "options");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withFingerprint(null)), "fingerprint");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> ok.withHealth(null)), "health");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> new PluginHealth(true, null, T0)), "message");
    assertMessage(assertThrows(IllegalArgumentException.class, () -> new PluginHealth(true, "", null)), "since");
  }

  @Test
  void fingerprint_validatesAndCopies() {
    Set<String> caps = new HashSet<>(Set.of("B", "A"));
    Map<String, String> topo = new HashMap<>(Map.of("zone", "z1"));
    Fingerprint f = new Fingerprint("n", "v", Map.of(), caps, Set.of(), Set.of(), "node", 3, topo);
    caps.add("C");
    topo.put("rack", "r1");
    assertEquals(Set.of("A", "B"), f.pluginCapabilities());
    assertEquals(Map.of("zone", "z1"), f.accessibleTopology());
    assertThrows(UnsupportedOperationException.class, () -> f.pluginCapabilities().add("X"));
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> new Fingerprint("n", "v", Map.of(), Set.of(), Set.of(), Set.of(), "node", -1, Map.of())), "maxVolumesPerNode");
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> new Fingerprint(null, "v", Map.of(), Set.of(), Set.of(), Set.of(), "node", 0, Map.of())), "fingerprint.name");
    Set<String> withNull = new HashSet<>();
    withNull.add(null);
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> new Fingerprint("n", "v", Map.of(), Set.of(), withNull, Set.of(), "node", 0, Map.of())), "controllerCapabilities");
  }

  @Test
  void options_areCopiedAndImmutable() {
    Map<String, String> options = new HashMap<>(Map.of("a", "1"));
    PluginInfo info = node("ebs", "a1").withOptions(options);
    options.put("b", "2");
    assertEquals(Map.of("a", "1"), info.options());
    assertThrows(UnsupportedOperationException.class, () -> info.options().put("c", "3"));
  }

  @Test
  void sameContentAs_ignoresRestoredAndHealthSinceOnly() {
    PluginInfo a = node("ebs", "a1");
    assertTrue(a.sameContentAs(a.withRestored(true)));
    assertTrue(a.sameContentAs(a.withHealth(PluginHealth.healthy(T0.plusSeconds(1)))));
    assertNotEquals(a, a.withRestored(true));
    assertFalse(a.sameContentAs(a.withHealth(PluginHealth.unhealthy("", T0))));
    assertFalse(a.sameContentAs(a.withHealth(new PluginHealth(true, "slow", T0))));
    assertFalse(a.sameContentAs(a.withVersion("2")));
    assertFalse(a.sameContentAs(a.withSocketPath(Path.of("/x"))));
    assertFalse(a.sameContentAs(a.withOptions(Map.of())));
    assertFalse(a.sameContentAs(a.withFingerprint(Fingerprint.EMPTY)));
    assertFalse(a.sameContentAs(node("ebs", "a2")));
    assertFalse(a.sameContentAs(TestRegistrations.controller("ebs", "a1")));
    assertFalse(a.sameContentAs(null));
  }

  @Test
  void pluginKey_storeKeyRoundTrips_evenWithSlashInAllocId() {
    PluginKey key = new PluginKey(PluginType.CSI_CONTROLLER, "ebs", "alloc/with/slashes");
    assertEquals("plugin/csi-controller/ebs/alloc/with/slashes", key.storeKey());
    assertEquals(key, PluginKey.fromStoreKey(key.storeKey()));
    assertEquals(new PluginKey(PluginType.CSI_NODE, "ebs", "a1"), node("ebs", "a1").key());
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "other/csi-node/a/b", "plugin/csi-node/a", "plugin/csi-blob/a/b", "plugin/csi-node/../b",
      "plugin/csi-node/a/"})
  void malformedStoreKeys_areRejectedNamingTheKey(String key) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PluginKey.fromStoreKey(key));
    assertTrue(e.getMessage().contains("'" + key + "'"), e.getMessage());
  }

  @Test
  void pluginEvent_validates() {
    PluginInfo info = node("ebs", "a1");
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> new PluginEvent(0, PluginType.CSI_NODE, PluginEvent.Kind.REGISTERED, info, T0)), "sequence");
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> new PluginEvent(1, PluginType.CSI_CONTROLLER, PluginEvent.Kind.REGISTERED, info, T0)), "plugin.type");
    assertMessage(assertThrows(IllegalArgumentException.class,
        () -> new PluginEvent(1, PluginType.CSI_NODE, null, info, T0)), "kind");
  }

  @Test
  void pluginNotFound_namesTypeAndName() {
    PluginNotFoundException e = new PluginNotFoundException(PluginType.CSI_CONTROLLER, "ebs");
    assertEquals("no csi-controller plugin named 'ebs' is registered", e.getMessage());
  }
}
