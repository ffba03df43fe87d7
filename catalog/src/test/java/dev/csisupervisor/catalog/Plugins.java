package dev.csisupervisor.catalog;

import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginHealth;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.state.InMemoryStateStore;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

/** Registrations for the catalog tests. */
final class Plugins {
  static final Instant T0 = Instant.parse("2026-11-23T10:00:00Z");

  private Plugins() {}

  static PluginInfo plugin(PluginType type, String name, String alloc, boolean healthy) {
    Fingerprint f = new Fingerprint(name + ".csi.example", "1.0.0", Map.of(), Set.of("CONTROLLER_SERVICE"),
        Set.of("CREATE_DELETE_VOLUME"), Set.of("STAGE_UNSTAGE_VOLUME"), type == PluginType.CSI_NODE ? "csi-" + alloc : "",
        type == PluginType.CSI_NODE ? 16 : 0, type == PluginType.CSI_NODE ? Map.of("zone", "z1") : Map.of());
    return new PluginInfo(type, name, "1.0.0", alloc, Path.of("/csi/" + name + "/" + alloc + "/csi.sock"), Map.of(), f,
        healthy ? PluginHealth.healthy(T0) : PluginHealth.unhealthy("probe failed", T0), false);
  }

  static PluginRegistry registry() {
    return PluginRegistry.builder().stateStore(new InMemoryStateStore()).build();
  }

  /** "node:ebs,controller:ebs" on allocs "<nodeId>-<name>". */
  static void registerAll(PluginRegistry r, String nodeId, String specs) {
    if (specs.isEmpty()) {
      return;
    }
    for (String s : specs.split(",")) {
      String[] p = s.split(":");
      PluginType t = p[0].equals("node") ? PluginType.CSI_NODE : PluginType.CSI_CONTROLLER;
      r.register(plugin(t, p[1], nodeId + "-" + p[1], true));
    }
  }
}
