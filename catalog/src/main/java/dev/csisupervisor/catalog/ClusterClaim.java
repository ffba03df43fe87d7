package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import java.time.Instant;
import java.util.Objects;

/**
 * Who uses a volume: {@code <prefix>/claims/<node>/<plugin>/<vol>/<alloc>}. Not on the node's lease: a claim
 * outlives its node's connection, and goes only when released. Immutable.
 *
 * @param pluginId the plugin id
 * @param volumeId the volume
 * @param nodeId the agent's node id
 * @param allocId the allocation that mounts it there
 * @param mode the access mode asked for
 * @param readOnly whether the allocation gets it read-only (every reader-only mode needs it)
 * @param csiNodeId the node plugin's NodeGetInfo node_id on that node: what ControllerPublishVolume is sent for
 *     ({@code ""} if the node plugin did not say)
 * @param since when it was taken
 * @param access block device or file system (what the controller publishes it as)
 * @param revision the etcd mod revision of its key as read or written (0: not from etcd); not part of its value. A
 *     release is conditional on it, so it never removes a newer claim of the same allocation; a claim taken again
 *     gets a new one
 */
public record ClusterClaim(String pluginId, String volumeId, String nodeId, String allocId, VolumeAccessMode mode,
    boolean readOnly, String csiNodeId, Instant since, ClaimAccess access, long revision) {

  /** A claim of a mount with the plugin's default file system. */
  public ClusterClaim(String pluginId, String volumeId, String nodeId, String allocId, VolumeAccessMode mode,
      boolean readOnly, String csiNodeId, Instant since) {
    this(pluginId, volumeId, nodeId, allocId, mode, readOnly, csiNodeId, since, ClaimAccess.MOUNT);
  }

  /** A claim not read from etcd (revision 0). */
  public ClusterClaim(String pluginId, String volumeId, String nodeId, String allocId, VolumeAccessMode mode,
      boolean readOnly, String csiNodeId, Instant since, ClaimAccess access) {
    this(pluginId, volumeId, nodeId, allocId, mode, readOnly, csiNodeId, since, access, 0);
  }

  public ClusterClaim {
    CsiIds.checkPlugin("pluginId", pluginId);
    CsiIds.checkVolume("volumeId", volumeId);
    CatalogKeys.checkNodeId(nodeId);
    CsiIds.checkName("allocId", allocId);
    Objects.requireNonNull(mode, "mode");
    if (!readOnly && !mode.writable()) {
      throw new IllegalArgumentException("readOnly must be true for access mode " + mode + " (volume " + volumeId + ")");
    }
    Objects.requireNonNull(csiNodeId, "csiNodeId");
    Objects.requireNonNull(since, "since");
    Objects.requireNonNull(access, "access");
    if (revision < 0) {
      throw new IllegalArgumentException("revision must be >= 0, got " + revision);
    }
  }

  /** The same claim at another etcd revision. */
  public ClusterClaim withRevision(long revision) {
    return new ClusterClaim(pluginId, volumeId, nodeId, allocId, mode, readOnly, csiNodeId, since, access, revision);
  }

  /** Whether {@code other} is this claim's value (everything but the revision). */
  public boolean sameAs(ClusterClaim other) {
    return withRevision(0).equals(other.withRevision(0));
  }

  /** Whether this claim writes. */
  public boolean writer() {
    return !readOnly;
  }

  /** "node/alloc", the holder as messages name it. */
  public String holder() {
    return "node " + nodeId + ", alloc " + allocId;
  }
}
