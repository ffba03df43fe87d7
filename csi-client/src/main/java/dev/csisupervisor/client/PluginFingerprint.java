package dev.csisupervisor.client;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.common.Values;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Everything a plugin told {@link CsiClient#fingerprint} about itself, in one immutable value.
 * Two fingerprints are equal when the plugin reported the same things; collections are sorted and
 * unmodifiable.
 *
 * <p>Capabilities are strings, named as {@link CsiCapabilities} describes (for example
 * {@code "SERVICE:CONTROLLER_SERVICE"}, {@code "VOLUME_EXPANSION:ONLINE"},
 * {@code "CREATE_DELETE_VOLUME"}); a value this build does not know is kept as
 * {@code "UNKNOWN(42)"} rather than dropped or treated as an error.
 *
 * <p>What a scheduler derives from the capabilities (needs a controller plugin, topology, expansion,
 * ...) is answered by the registry's {@code Fingerprint}, which the supervisor maps this value to.
 *
 * <p>Fields a plugin kind does not serve are empty: a {@link PluginKind#CONTROLLER} fingerprint has
 * no node capabilities, {@code nodeId == ""}, {@code maxVolumesPerNode == 0} and no topology; a
 * {@link PluginKind#NODE} fingerprint has no controller capabilities.
 *
 * @param name plugin name from GetPluginInfo (never blank)
 * @param vendorVersion vendor version from GetPluginInfo (may be empty)
 * @param manifest manifest from GetPluginInfo
 * @param pluginCapabilities from GetPluginCapabilities
 * @param controllerCapabilities from ControllerGetCapabilities (controller and monolith plugins)
 * @param nodeCapabilities from NodeGetCapabilities (node and monolith plugins)
 * @param nodeId from NodeGetInfo; {@code ""} when the plugin has no Node service
 * @param maxVolumesPerNode from NodeGetInfo; {@code 0} when the plugin set none (the CO decides)
 * @param accessibleTopology from NodeGetInfo's accessible_topology segments
 */
public record PluginFingerprint(
    String name,
    String vendorVersion,
    Map<String, String> manifest,
    Set<String> pluginCapabilities,
    Set<String> controllerCapabilities,
    Set<String> nodeCapabilities,
    String nodeId,
    long maxVolumesPerNode,
    Map<String, String> accessibleTopology) {

  public PluginFingerprint {
    Values.requireNonBlank(name, "name");
    Objects.requireNonNull(vendorVersion, "vendorVersion");
    manifest = Values.copyOf(manifest, "manifest");
    pluginCapabilities = Values.copyOf(pluginCapabilities, "pluginCapabilities");
    controllerCapabilities = Values.copyOf(controllerCapabilities, "controllerCapabilities");
    nodeCapabilities = Values.copyOf(nodeCapabilities, "nodeCapabilities");
    Objects.requireNonNull(nodeId, "nodeId");
    Bounds.notNegative(maxVolumesPerNode, "maxVolumesPerNode");
    accessibleTopology = Values.copyOf(accessibleTopology, "accessibleTopology");
  }

  /**
   * Assembles a fingerprint from the individual answers.
   *
   * @param nodeInfo empty for a plugin without the Node service
   */
  public static PluginFingerprint of(
      CsiPluginInfo info,
      Set<String> pluginCapabilities,
      Set<String> controllerCapabilities,
      Set<String> nodeCapabilities,
      Optional<CsiNodeInfo> nodeInfo) {
    Objects.requireNonNull(info, "info");
    Objects.requireNonNull(nodeInfo, "nodeInfo");
    return new PluginFingerprint(
        info.name(),
        info.vendorVersion(),
        info.manifest(),
        pluginCapabilities,
        controllerCapabilities,
        nodeCapabilities,
        nodeInfo.map(CsiNodeInfo::nodeId).orElse(""),
        nodeInfo.map(CsiNodeInfo::maxVolumesPerNode).orElse(0L),
        nodeInfo.map(CsiNodeInfo::accessibleTopology).orElse(Map.of()));
  }

  /** The plugin info part of this fingerprint. */
  public CsiPluginInfo pluginInfo() {
    return new CsiPluginInfo(name, vendorVersion, manifest);
  }

  /** The node info part, or empty if the plugin has no Node service. */
  public Optional<CsiNodeInfo> nodeInfo() {
    return nodeId.isEmpty()
        ? Optional.empty()
        : Optional.of(new CsiNodeInfo(nodeId, maxVolumesPerNode, accessibleTopology));
  }

  /**
   * Whether the plugin serves the Controller service: it advertises
   * {@link CsiCapabilities#CONTROLLER_SERVICE} (CSI: "the CO MUST NOT call Controller RPCs"
   * otherwise).
   */
  public boolean servesController() {
    return pluginCapabilities.contains(CsiCapabilities.CONTROLLER_SERVICE);
  }

  /** Whether the plugin serves the Node service (it answered NodeGetInfo). */
  public boolean servesNode() {
    return !nodeId.isEmpty();
  }
}
