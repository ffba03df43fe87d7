package dev.csisupervisor.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginType;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What a fingerprinted plugin is registered as, for each configured kind and what it really serves. */
class RegisteredTypesTest {
  private static final String CONTROLLER_SERVICE = CsiCapabilities.CONTROLLER_SERVICE;

  /** A driver advertising {@code pluginCaps}; it serves Node when it has a node id. */
  private static PluginFingerprint driver(Set<String> pluginCaps, String nodeId) {
    return new PluginFingerprint("x.csi.io", "1.0", Map.of(), pluginCaps, Set.of(), Set.of(), nodeId, 0, Map.of());
  }

  @Test
  void monolithServingBothHalves_registersControllerThenNode() {
    RegisteredTypes t = RegisteredTypes.of("p", PluginKind.MONOLITH, driver(Set.of(CONTROLLER_SERVICE), "n1"));
    assertEquals(List.of(PluginType.CSI_CONTROLLER, PluginType.CSI_NODE), List.copyOf(t.types()));
    assertNull(t.skipped());
    assertNull(t.refused());
  }

  @Test
  void monolithServingOneHalf_registersIt_andSaysWhichWasSkipped() {
    RegisteredTypes nodeOnly = RegisteredTypes.of("p", PluginKind.MONOLITH, driver(Set.of(), "n1"));
    assertEquals(Set.of(PluginType.CSI_NODE), nodeOnly.types());
    assertTrue(nodeOnly.skipped().startsWith("controller half not registered: plugin p"), nodeOnly.skipped());
    RegisteredTypes controllerOnly = RegisteredTypes.of("p", PluginKind.MONOLITH, driver(Set.of(CONTROLLER_SERVICE), ""));
    assertEquals(Set.of(PluginType.CSI_CONTROLLER), controllerOnly.types());
    assertTrue(controllerOnly.skipped().startsWith("node half not registered: plugin p"), controllerOnly.skipped());
  }

  @Test
  void monolithServingNeitherHalf_isRefused_sayingBoth() {
    RegisteredTypes t = RegisteredTypes.of("p", PluginKind.MONOLITH, driver(Set.of(), ""));
    assertEquals(Set.of(), t.types());
    assertTrue(t.refused().contains("serves neither half") && t.refused().contains("UNIMPLEMENTED"), t.refused());
  }

  @Test
  void controllerWithoutTheCapability_isRefused_nodeIsRegisteredAsNode() {
    RegisteredTypes c = RegisteredTypes.of("p", PluginKind.CONTROLLER, driver(Set.of(), "n1"));
    assertTrue(c.refused().contains("does not advertise the CONTROLLER_SERVICE"), c.refused());
    assertEquals(Set.of(PluginType.CSI_NODE), RegisteredTypes.of("p", PluginKind.NODE, driver(Set.of(), "n1")).types());
  }
}
