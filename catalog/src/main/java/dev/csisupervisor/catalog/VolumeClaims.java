package dev.csisupervisor.catalog;

import java.util.List;
import java.util.Optional;

/**
 * The node side of cluster volumes, and the volume records: claims taken in one transaction that checks every other
 * claim of the volume (of two concurrent single-writer claims exactly one wins, on any node), released only as taken
 * (their revision), on no lease; the node's wait for its attachment; its clean-stop marker; an operator's force.
 * Part of {@link ClusterVolumes}. Thread-safe.
 */
public interface VolumeClaims {
  /**
   * Registers a volume (created through a controller, or an existing disk by id).
   *
   * @return true if written, false if the same volume was registered already
   * @throws VolumeStateException if the id is registered with other content
   */
  boolean register(ClusterVolume volume) throws VolumeStateException;

  /**
   * Removes a volume's record.
   *
   * @return false if it was not registered
   * @throws VolumeStateException while it has claims or attachments
   */
  boolean deregister(String pluginId, String volumeId) throws VolumeStateException;

  Optional<ClusterVolume> volume(String pluginId, String volumeId);

  /**
   * Takes a claim (see the class comment). The same allocation's claim again, with the same mode and read-only
   * flag, is granted as it stands.
   *
   * @return the claim as stored
   * @throws ClaimRefusedException naming the reason and, for a conflict, the holder (node, alloc)
   */
  ClusterClaim claim(ClaimRequest request) throws ClaimRefusedException;

  /** Deletes one claim whatever its revision (an operator's tool); false if there was none. */
  boolean release(String pluginId, String volumeId, String nodeId, String allocId);

  /**
   * Deletes the claim as {@code claim} read or took it: only if its key's mod revision is still
   * {@link ClusterClaim#revision()} (0: whatever it is), so a release never removes a newer claim of the same
   * allocation (taken again meanwhile). To be called once the allocation is unmounted and, if it was the node's
   * last use, the volume unstaged on its node.
   *
   * @return false if there was no such claim (released already, or taken again since)
   */
  boolean release(ClusterClaim claim);

  /** Every claim of one volume. */
  List<ClusterClaim> claims(String pluginId, String volumeId);

  /** Every claim held by one node. */
  List<ClusterClaim> claimsOfNode(String nodeId);

  /**
   * Orders the node's claims (of {@code order}'s plugin id and volume, if given) fenced by their controller agents
   * now: ControllerUnpublishVolume to the node first, then the claims and attachments go ({@link DetachOrder});
   * acted on only while the node is gone (its node key absent). Replaces an earlier order of the node.
   */
  void orderDetach(DetachOrder order);

  /** Removes the node's detach order; whether there was one. */
  boolean withdrawDetach(String nodeId);

  /**
   * The operator's force: deletes every claim of {@code nodeId} (of one volume, if given) and its attachments,
   * without any unpublish. For a node known to be gone (powered off, its disk detached by hand).
   *
   * @return the claims removed
   */
  List<ClusterClaim> forceDetach(String nodeId, Optional<String> pluginId, Optional<String> volumeId);

  Optional<ClusterAttachment> attachment(String pluginId, String volumeId, String nodeId);

  /**
   * Whether the plugin id's controller offers {@code PUBLISH_UNPUBLISH_VOLUME} (then a node's claim waits for its
   * attachment): as its controller agent last remembered it ({@link ControllerAttachments#rememberCapabilities}), which stays while no
   * controller runs; before any agent ever led the id, as any controller plugin of the id in the catalog says.
   */
  boolean controllerPublishes(String pluginId);

  /**
   * This agent stops cleanly and keeps its mounts: it is marked so (a key on no lease), and is not taken for a lost
   * node, nor ever fenced automatically, until it runs again ({@link #clearStopped}).
   */
  void markStopped();

  /** This agent runs: its clean-stop marker, if any, goes. */
  void clearStopped();
}
