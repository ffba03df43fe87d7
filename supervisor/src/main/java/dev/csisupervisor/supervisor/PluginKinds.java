package dev.csisupervisor.supervisor;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.registry.PluginType;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * The one place where what a plugin is configured as ({@link PluginKind}: the CSI services it runs)
 * meets what the registry keys it by ({@link PluginType}): a monolith registers once per type.
 */
public final class PluginKinds {
  private PluginKinds() {}

  /** The registry types a plugin of {@code kind} registers as when it serves every service of its kind. */
  public static Set<PluginType> registryTypes(PluginKind kind) {
    EnumSet<PluginType> types = EnumSet.noneOf(PluginType.class);
    if (kind.hasController()) {
      types.add(PluginType.CSI_CONTROLLER);
    }
    if (kind.hasNode()) {
      types.add(PluginType.CSI_NODE);
    }
    return Collections.unmodifiableSet(types);
  }
}
