package dev.csisupervisor.supervisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.registry.Fingerprint;
import java.lang.reflect.RecordComponent;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FingerprintMappingTest {

  private static PluginFingerprint fingerprint(Set<String> plugin, Set<String> controller, Set<String> node) {
    return new PluginFingerprint("ebs.csi.aws.com", "1.2.3", Map.of("commit", "abc"), plugin, controller, node,
        "node-7", 25, Map.of("zone", "z1"));
  }

  @Test
  void bothRecords_haveTheSameComponents_inTheSameOrder() {
    assertEquals(names(PluginFingerprint.class), names(Fingerprint.class),
        "a component added to one fingerprint record must be added to the other and mapped");
  }

  @Test
  void everyComponent_isCarriedOverUnchanged() throws Exception {
    PluginFingerprint fp = fingerprint(Set.of(CsiCapabilities.CONTROLLER_SERVICE),
        Set.of(CsiCapabilities.CREATE_DELETE_VOLUME), Set.of(CsiCapabilities.STAGE_UNSTAGE_VOLUME));
    Fingerprint mapped = FingerprintMapping.toRegistry(fp);
    for (RecordComponent c : PluginFingerprint.class.getRecordComponents()) {
      Object expected = c.getAccessor().invoke(fp);
      Object actual = Fingerprint.class.getMethod(c.getName()).invoke(mapped);
      assertEquals(expected, actual, c.getName());
    }
  }

  @Test
  void derivedSchedulerFlags_readTheCapabilityNamesTheClientWrites() {
    Fingerprint all = FingerprintMapping.toRegistry(fingerprint(
        Set.of(CsiCapabilities.CONTROLLER_SERVICE, CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS,
            CsiCapabilities.GROUP_CONTROLLER_SERVICE, CsiCapabilities.VOLUME_EXPANSION_OFFLINE),
        Set.of(CsiCapabilities.VOLUME_CONDITION),
        Set.of(CsiCapabilities.SINGLE_NODE_MULTI_WRITER)));
    assertEquals(List.of(true, true, true, true, true, true), flags(all));

    Fingerprint expandByRpc = FingerprintMapping.toRegistry(
        fingerprint(Set.of(CsiCapabilities.VOLUME_EXPANSION_ONLINE), Set.of(), Set.of(CsiCapabilities.EXPAND_VOLUME)));
    assertTrue(expandByRpc.supportsExpansion());
    assertFalse(expandByRpc.requiresControllerPlugin());

    Fingerprint none = FingerprintMapping.toRegistry(fingerprint(Set.of("SERVICE:UNKNOWN(42)"), Set.of(), Set.of()));
    assertEquals(List.of(false, false, false, false, false, false), flags(none));
  }

  /** The derived flags in a fixed order: controller, topology, group controller, expansion, condition, multi-writer. */
  private static List<Boolean> flags(Fingerprint f) {
    return List.of(f.requiresControllerPlugin(), f.supportsTopology(), f.hasGroupController(), f.supportsExpansion(),
        f.supportsVolumeCondition(), f.supportsSingleNodeMultiWriter());
  }

  private static List<String> names(Class<? extends Record> type) {
    return Arrays.stream(type.getRecordComponents()).map(RecordComponent::getName).toList();
  }
}
