package dev.csisupervisor.registry;

import java.util.Map;
import java.util.Set;

/**
 * What a plugin said about itself when it was fingerprinted (CSI GetPluginInfo, GetPluginCapabilities,
 * ControllerGetCapabilities, NodeGetInfo, NodeGetCapabilities), as plain strings so the registry needs no
 * gRPC types. Capabilities are the CSI enum names ({@code "CONTROLLER_SERVICE"}); a value this code does
 * not know is kept as e.g. {@code "UNKNOWN_42"}. Empty strings/collections mean "not reported".
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
    if (maxVolumesPerNode < 0) {
      throw new IllegalArgumentException("fingerprint.maxVolumesPerNode must be >= 0, got " + maxVolumesPerNode);
    }
    accessibleTopology = Checks.stringMap(accessibleTopology, "fingerprint.accessibleTopology");
  }
}
