package dev.csisupervisor.registry;

import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

/** Builders for test registrations. */
final class TestRegistrations {
  private TestRegistrations() {}

  static final Instant T0 = Instant.parse("2024-05-01T10:00:00Z");

  static PluginInfo info(PluginType type, String name, String allocId) {
    return new PluginInfo(type, name, "1.0.0", allocId, Path.of("/csi", type.id(), name, allocId, "csi.sock"),
        Map.of("mode", "test"), fingerprint(name), PluginHealth.healthy(T0), false);
  }

  static PluginInfo node(String name, String allocId) {
    return info(PluginType.CSI_NODE, name, allocId);
  }

  static PluginInfo controller(String name, String allocId) {
    return info(PluginType.CSI_CONTROLLER, name, allocId);
  }

  static Fingerprint fingerprint(String name) {
    return new Fingerprint("vendor." + name, "1.0.0", Map.of("build", "abc"), Set.of("CONTROLLER_SERVICE"),
        Set.of("CREATE_DELETE_VOLUME", "UNKNOWN_42"), Set.of("STAGE_UNSTAGE_VOLUME"), "node-1", 16,
        Map.of("zone", "z1"));
  }
}
