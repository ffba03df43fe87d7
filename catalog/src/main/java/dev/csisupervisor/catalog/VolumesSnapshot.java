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
 */
public record VolumesSnapshot(long revision, List<ClusterVolume> volumes, List<ClusterClaim> claims,
    List<ClusterAttachment> attachments, Map<String, String> controllers, Set<String> liveNodes) {

  public VolumesSnapshot {
    volumes = List.copyOf(volumes);
    claims = List.copyOf(claims);
    attachments = List.copyOf(attachments);
    controllers = Map.copyOf(controllers);
    liveNodes = Set.copyOf(liveNodes);
  }

  public List<ClusterClaim> claimsOf(String pluginId, String volumeId) {
    return claims.stream().filter(c -> c.pluginId().equals(pluginId) && c.volumeId().equals(volumeId)).toList();
  }

  public List<ClusterAttachment> attachmentsOf(String pluginId, String volumeId) {
    return attachments.stream().filter(a -> a.pluginId().equals(pluginId) && a.volumeId().equals(volumeId)).toList();
  }
}
