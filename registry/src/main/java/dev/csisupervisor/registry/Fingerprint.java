package dev.csisupervisor.registry;

import dev.csisupervisor.common.Bounds;
import java.util.Map;
import java.util.Set;

/**
 * What a plugin said about itself when it was fingerprinted (CSI GetPluginInfo, GetPluginCapabilities,
 * ControllerGetCapabilities, NodeGetInfo, NodeGetCapabilities), as plain strings so the registry needs no
 * gRPC types. Capabilities are named as the csi-client names them: plugin capabilities
 * {@code "SERVICE:CONTROLLER_SERVICE"} / {@code "VOLUME_EXPANSION:ONLINE"}, controller and node capabilities
 * the bare enum name ({@code "STAGE_UNSTAGE_VOLUME"}); a value this code does not know is kept as e.g.
 * {@code "SERVICE:UNKNOWN(42)"}. Empty strings/collections mean "not reported".
 *
 * <p>What a scheduler needs to place volume-using tasks is derived from the capabilities by the methods
 * below ({@link #requiresControllerPlugin()}, {@link #supportsTopology()}, ...), so it is kept (and persisted)
 * exactly as long as the capabilities are.
 * Immutable: collections are copied (sorted) in the constructor.
 */
public record Fingerprint(
    String name,
    String vendorVersion,
    Map<String, String> manifest,
    Set<String> pluginCapabilities,
    Set<String> controllerCapabilities,
    Set<String> nodeCapabilities,
    String nodeId,
    long maxVolumesPerNode,
    Map<String, String> accessibleTopology) {

  /** Nothing reported. */
  public static final Fingerprint EMPTY = new Fingerprint("", "", Map.of(), Set.of(), Set.of(), Set.of(), "", 0, Map.of());

  public Fingerprint {
    Checks.notNull(name, "fingerprint.name");
    Checks.notNull(vendorVersion, "fingerprint.vendorVersion");
    manifest = Checks.stringMap(manifest, "fingerprint.manifest");
    pluginCapabilities = Checks.stringSet(pluginCapabilities, "fingerprint.pluginCapabilities");
    controllerCapabilities = Checks.stringSet(controllerCapabilities, "fingerprint.controllerCapabilities");
    nodeCapabilities = Checks.stringSet(nodeCapabilities, "fingerprint.nodeCapabilities");
    Checks.notNull(nodeId, "fingerprint.nodeId");
    Bounds.atLeast(maxVolumesPerNode, 0, "fingerprint.maxVolumesPerNode");
    accessibleTopology = Checks.stringMap(accessibleTopology, "fingerprint.accessibleTopology");
  }

  /** Volumes need a controller plugin: the plugin advertises the Controller service. */
  public boolean requiresControllerPlugin() {
    return pluginCapabilities.contains("SERVICE:CONTROLLER_SERVICE");
  }

  /** Volumes are not equally accessible from all nodes: placement must honour topology. */
  public boolean supportsTopology() {
    return pluginCapabilities.contains("SERVICE:VOLUME_ACCESSIBILITY_CONSTRAINTS");
  }

  /** Volumes can be expanded (online / offline, or an EXPAND_VOLUME controller or node RPC). */
  public boolean supportsExpansion() {
    return pluginCapabilities.contains("VOLUME_EXPANSION:ONLINE")
        || pluginCapabilities.contains("VOLUME_EXPANSION:OFFLINE")
        || controllerCapabilities.contains("EXPAND_VOLUME")
        || nodeCapabilities.contains("EXPAND_VOLUME");
  }

  /** The plugin reports volume condition (controller or node VOLUME_CONDITION). */
  public boolean supportsVolumeCondition() {
    return controllerCapabilities.contains("VOLUME_CONDITION") || nodeCapabilities.contains("VOLUME_CONDITION");
  }

  /** The plugin supports the SINGLE_NODE_SINGLE_WRITER / SINGLE_NODE_MULTI_WRITER access modes. */
  public boolean supportsSingleNodeMultiWriter() {
    return controllerCapabilities.contains("SINGLE_NODE_MULTI_WRITER")
        || nodeCapabilities.contains("SINGLE_NODE_MULTI_WRITER");
  }

  /** The plugin serves the GroupController service. */
  public boolean hasGroupController() {
    return pluginCapabilities.contains("SERVICE:GROUP_CONTROLLER_SERVICE");
  }
}
