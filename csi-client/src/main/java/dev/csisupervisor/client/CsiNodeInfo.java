package dev.csisupervisor.client;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.common.Values;
import java.util.Map;

/**
 * The answer to CSI {@code Node.NodeGetInfo}. Immutable.
 *
 * @param nodeId the node's id as the plugin knows it (CSI requires it: never blank)
 * @param maxVolumesPerNode how many volumes may be published to this node; {@code 0} means the
 *     plugin did not set a limit (CSI: "not set or zero: the CO SHALL decide"); never negative
 * @param accessibleTopology the node's topology segments (e.g. {@code zone -> Z1}); empty when
 *     the plugin reports none (sorted, unmodifiable)
 */
public record CsiNodeInfo(String nodeId, long maxVolumesPerNode, Map<String, String> accessibleTopology) {
  public CsiNodeInfo {
    Values.requireNonBlank(nodeId, "nodeId");
    Bounds.notNegative(maxVolumesPerNode, "maxVolumesPerNode");
    accessibleTopology = Values.copyOf(accessibleTopology, "accessibleTopology");
  }
}
