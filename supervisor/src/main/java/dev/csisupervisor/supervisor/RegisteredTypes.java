package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginFingerprint;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginType;
import java.util.EnumSet;
import java.util.Set;

/**
 * What a fingerprinted plugin is registered as, given what its config says it is: a controller must advertise
 * the CONTROLLER_SERVICE capability; a node is registered as one; a monolith as each half it really serves,
 * the other half reported as skipped, and refused if it serves neither. Pure.
 *
 * @param types   the registry types to register (empty when refused)
 * @param skipped why one half of a monolith is not registered, or null
 * @param refused why nothing is registered, or null
 */
record RegisteredTypes(Set<PluginType> types, String skipped, String refused) {
  RegisteredTypes {
    // In the enum's order, which is the order they are registered in (a monolith: controller, then node).
    types = types.isEmpty() ? Set.of() : java.util.Collections.unmodifiableSet(EnumSet.copyOf(types));
  }

  static RegisteredTypes of(String pluginId, PluginKind configured, PluginFingerprint fp) {
    switch (configured) {
      case CONTROLLER -> {
        if (!fp.servesController()) {
          return refused("plugin " + pluginId + " (driver " + fp.name() + " " + fp.vendorVersion()
              + ") is configured as a controller but does not advertise the CONTROLLER_SERVICE plugin capability"
              + " (GetPluginCapabilities: " + fp.pluginCapabilities() + ")");
        }
        return new RegisteredTypes(PluginKinds.registryTypes(PluginKind.CONTROLLER), null, null);
      }
      case NODE -> {
        return new RegisteredTypes(PluginKinds.registryTypes(PluginKind.NODE), null, null);
      }
      default -> {
        Set<PluginType> types = EnumSet.noneOf(PluginType.class);
        String skipped = null;
        if (fp.servesController()) {
          types.add(PluginType.CSI_CONTROLLER);
        } else {
          skipped = "controller half not registered: plugin " + pluginId + " (driver " + fp.name()
              + ") is configured as a monolith but does not advertise the CONTROLLER_SERVICE plugin capability"
              + " (GetPluginCapabilities: " + fp.pluginCapabilities() + ")";
        }
        if (fp.servesNode()) {
          types.add(PluginType.CSI_NODE);
        } else {
          skipped = "node half not registered: plugin " + pluginId + " (driver " + fp.name()
              + ") is configured as a monolith but its Node service answers UNIMPLEMENTED";
        }
        if (types.isEmpty()) {
          return refused("plugin " + pluginId + " (driver " + fp.name() + ") is configured as a monolith but serves"
              + " neither half: no CONTROLLER_SERVICE plugin capability, and its Node service answers UNIMPLEMENTED");
        }
        return new RegisteredTypes(types, skipped, null);
      }
    }
  }

  private static RegisteredTypes refused(String why) {
    return new RegisteredTypes(Set.of(), null, why);
  }
}
