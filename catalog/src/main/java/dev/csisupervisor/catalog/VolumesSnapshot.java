package dev.csisupervisor.catalog;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Every cluster volume, claim, attachment and controller agent at one etcd revision, with the nodes whose
 * lease is alive. Immutable.
 *
 * @param revision the etcd revision read
 * @param volumes every registered volume
 * @param claims every claim
 * @param attachments every attachment
 * @param controllers per plugin id, the agent elected to publish its volumes
 * @param liveNodes the node ids whose node key (on their lease) exists
 * @param requests every create and delete request (done creates included), each with its mod revision
 * @param stoppedNodes the node ids whose agent stopped cleanly with its mounts kept (DESIGN.md: not a lost node), and
 *     since when, until it starts again
 * @param detachOrders per node, an operator's order to detach it ({@link DetachOrder})
 * @param damaged keys whose value does not read (a newer version's, a truncated one, a key whose node or alloc
 *     disagrees with its value), each with why: left out of the lists above, shown by status, removable by an
 *     operator's force. An unreadable claim still holds its volume on its node (no detach), an unreadable attachment
 *     still holds its volume (no single-node attach elsewhere)
 * @param snapshots every recorded snapshot ({@link ClusterVolumeSnapshot})
 */
public record VolumesSnapshot(long revision, List<ClusterVolume> volumes, List<ClusterClaim> claims,
    List<ClusterAttachment> attachments, Map<String, String> controllers, Set<String> liveNodes,
    List<ClusterVolumeRequest> requests, Map<String, java.time.Instant> stoppedNodes, List<DamagedKey> damaged,
    Map<String, DetachOrder> detachOrders, List<ClusterVolumeSnapshot> snapshots) {

  /**
   * A key whose value does not read, and why; what its key says of it where it parses (else "").
   *
   * @param kind {@code claim}, {@code attachment}, {@code volume}, {@code request}, ...
   */
  public record DamagedKey(String key, String why, String kind, String pluginId, String volumeId, String nodeId) {}

  public VolumesSnapshot {
    volumes = List.copyOf(volumes);
    claims = List.copyOf(claims);
    attachments = List.copyOf(attachments);
    controllers = Map.copyOf(controllers);
    liveNodes = Set.copyOf(liveNodes);
    requests = List.copyOf(requests);
    stoppedNodes = Map.copyOf(stoppedNodes);
    damaged = List.copyOf(damaged);
    detachOrders = Map.copyOf(detachOrders);
    snapshots = List.copyOf(snapshots);
  }

  /** A recorded snapshot, if there is one. */
  public java.util.Optional<ClusterVolumeSnapshot> snapshot(String pluginId, String snapshotId) {
    return snapshots.stream().filter(x -> x.pluginId().equals(pluginId) && x.snapshotId().equals(snapshotId))
        .findFirst();
  }

  /** A registered volume, if there is one. */
  public java.util.Optional<ClusterVolume> volume(String pluginId, String volumeId) {
    return volumes.stream().filter(v -> v.pluginId().equals(pluginId) && v.volumeId().equals(volumeId)).findFirst();
  }

  /** Whether an unreadable claim key says {@code nodeId} claims the volume. */
  public boolean unreadableClaim(String pluginId, String volumeId, String nodeId) {
    return damaged.stream().anyMatch(d -> d.kind().equals("claim") && d.pluginId().equals(pluginId)
        && d.volumeId().equals(volumeId) && d.nodeId().equals(nodeId));
  }

  /** The nodes an unreadable attachment key of the volume names. */
  public Set<String> unreadableAttachments(String pluginId, String volumeId) {
    return damaged.stream().filter(d -> d.kind().equals("attachment") && d.pluginId().equals(pluginId)
        && d.volumeId().equals(volumeId)).map(DamagedKey::nodeId).collect(java.util.stream.Collectors.toSet());
  }

  /**
   * Whether an operator ordered the node's claims of the volume detached ({@link DetachOrder}) and the node is
   * gone (its node key absent: lost, or stopped for good).
   */
  public boolean detachOrdered(String nodeId, String pluginId, String volumeId) {
    DetachOrder o = detachOrders.get(nodeId);
    return o != null && !liveNodes.contains(nodeId) && o.covers(pluginId, volumeId);
  }

  /** Whether {@code nodeId} is lost: its lease is gone, and it did not stop cleanly. */
  public boolean lost(String nodeId) {
    return !liveNodes.contains(nodeId) && !stoppedNodes.containsKey(nodeId);
  }

  /** The requests of one plugin id that are not done: pending or failed. */
  public List<ClusterVolumeRequest> openRequests(String pluginId) {
    return requests.stream().filter(r -> r.pluginId().equals(pluginId) && r.state() != ClusterVolumeRequest.State.DONE)
        .toList();
  }

  /** The delete request of a volume, if any. */
  public java.util.Optional<ClusterVolumeRequest> deleteOf(String pluginId, String volumeId) {
    return requests.stream().filter(r -> r.kind() == ClusterVolumeRequest.Kind.DELETE
        && r.pluginId().equals(pluginId) && r.name().equals(volumeId)).findFirst();
  }

  /** The done create that made a volume, if it was made through a create request. */
  public java.util.Optional<ClusterVolumeRequest> createOf(String pluginId, String volumeId) {
    return requests.stream().filter(r -> r.kind() == ClusterVolumeRequest.Kind.CREATE
        && r.state() == ClusterVolumeRequest.State.DONE && r.pluginId().equals(pluginId)
        && r.volumeId().equals(volumeId)).findFirst();
  }

  public List<ClusterClaim> claimsOf(String pluginId, String volumeId) {
    return claims.stream().filter(c -> c.pluginId().equals(pluginId) && c.volumeId().equals(volumeId)).toList();
  }

  public List<ClusterAttachment> attachmentsOf(String pluginId, String volumeId) {
    return attachments.stream().filter(a -> a.pluginId().equals(pluginId) && a.volumeId().equals(volumeId)).toList();
  }
}
