package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One registration of one node as the catalog holds it: what a scheduler needs to place work (name, type,
 * version, alloc, health and since when, the fingerprint's scheduler-relevant parts, topology). Socket
 * paths and task options stay on the node. Immutable; collections are copied and sorted.
 *
 * @param nodeId the node that published it
 * @param type controller or node
 * @param name the plugin name
 * @param allocId the allocation running it on that node
 * @param version the plugin's version
 * @param healthy whether its last probe succeeded
 * @param healthMessage the last health message ({@code ""} if none)
 * @param healthSince when the health flag or message last changed
 * @param vendorName CSI GetPluginInfo name
 * @param vendorVersion CSI GetPluginInfo vendor_version
 * @param pluginCapabilities CSI plugin capabilities
 * @param controllerCapabilities CSI controller capabilities
 * @param nodeCapabilities CSI node capabilities
 * @param csiNodeId CSI NodeGetInfo node_id ({@code ""} for a controller)
 * @param maxVolumesPerNode CSI NodeGetInfo max_volumes_per_node (0: not reported)
 * @param accessibleTopology CSI NodeGetInfo accessible_topology segments
 */
public record CatalogEntry(
    String nodeId,
    PluginType type,
    String name,
    String allocId,
    String version,
    boolean healthy,
    String healthMessage,
    Instant healthSince,
    String vendorName,
    String vendorVersion,
    Set<String> pluginCapabilities,
    Set<String> controllerCapabilities,
    Set<String> nodeCapabilities,
    String csiNodeId,
    long maxVolumesPerNode,
    Map<String, String> accessibleTopology) {

  public CatalogEntry {
    CatalogKeys.checkNodeId(nodeId);
    Objects.requireNonNull(type, "type");
    // PluginKey validates name and allocId and names them.
    new dev.csisupervisor.registry.PluginKey(type, name, allocId);
    version = nonNull(version, "version");
    healthMessage = nonNull(healthMessage, "healthMessage");
    if (healthSince == null) {
      throw new IllegalArgumentException("healthSince must not be null");
    }
    vendorName = nonNull(vendorName, "vendorName");
    vendorVersion = nonNull(vendorVersion, "vendorVersion");
    pluginCapabilities = Set.copyOf(new TreeSet<>(nonNull(pluginCapabilities, "pluginCapabilities")));
    controllerCapabilities = Set.copyOf(new TreeSet<>(nonNull(controllerCapabilities, "controllerCapabilities")));
    nodeCapabilities = Set.copyOf(new TreeSet<>(nonNull(nodeCapabilities, "nodeCapabilities")));
    csiNodeId = nonNull(csiNodeId, "csiNodeId");
    Bounds.atLeast(maxVolumesPerNode, 0, "maxVolumesPerNode");
    accessibleTopology = java.util.Collections.unmodifiableMap(new TreeMap<>(nonNull(accessibleTopology, "accessibleTopology")));
  }

  private static <T> T nonNull(T v, String field) {
    if (v == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    return v;
  }

  /** The catalog's view of a local registration of {@code nodeId}. */
  public static CatalogEntry of(String nodeId, PluginInfo p) {
    var f = p.fingerprint();
    return new CatalogEntry(nodeId, p.type(), p.name(), p.allocId(), p.version(), p.health().healthy(),
        p.health().message(), p.health().since(), f.name(), f.vendorVersion(), f.pluginCapabilities(),
        f.controllerCapabilities(), f.nodeCapabilities(), f.nodeId(), f.maxVolumesPerNode(), f.accessibleTopology());
  }
}
