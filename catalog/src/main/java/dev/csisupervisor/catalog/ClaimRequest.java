package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Values;
import java.util.Map;

/**
 * What a node asks for when it claims a volume ({@link ClusterVolumes#claim}). Validated here, each field named.
 *
 * @param pluginId the plugin id
 * @param volumeId the volume, registered in the cluster
 * @param nodeId this agent's node id
 * @param allocId the allocation mounting it
 * @param mode the access mode
 * @param readOnly read-only (required by the reader-only modes)
 * @param csiNodeId this node's node plugin's NodeGetInfo node_id ({@code ""} if unknown)
 * @param nodeTopology this node's node plugin's accessible topology
 * @param access block device or file system
 */
public record ClaimRequest(String pluginId, String volumeId, String nodeId, String allocId, VolumeAccessMode mode,
    boolean readOnly, String csiNodeId, Map<String, String> nodeTopology, ClaimAccess access) {

  /** A claim of a mount with the plugin's default file system. */
  public ClaimRequest(String pluginId, String volumeId, String nodeId, String allocId, VolumeAccessMode mode,
      boolean readOnly, String csiNodeId, Map<String, String> nodeTopology) {
    this(pluginId, volumeId, nodeId, allocId, mode, readOnly, csiNodeId, nodeTopology, ClaimAccess.MOUNT);
  }

  public ClaimRequest {
    // The claim it becomes checks (and names) every field it shares.
    new ClusterClaim(pluginId, volumeId, nodeId, allocId, mode, readOnly, csiNodeId, java.time.Instant.EPOCH, access);
    nodeTopology = Values.copyOf(nodeTopology, "nodeTopology");
  }

  ClusterClaim toClaim(java.time.Instant now) {
    return new ClusterClaim(pluginId, volumeId, nodeId, allocId, mode, readOnly, csiNodeId, now, access);
  }
}
