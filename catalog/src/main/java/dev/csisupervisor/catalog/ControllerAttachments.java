package dev.csisupervisor.catalog;

import java.util.Optional;
import java.util.Set;

/**
 * The controller agent's attachments and fence: every write conditional on its election key and on the attachment
 * as read (its revision); the intent ({@link ClusterAttachment.State#ATTACHING}) before each publish. Part of
 * {@link ClusterVolumes}. Thread-safe.
 */
public interface ControllerAttachments extends ControllerElection {
  /**
   * As the controller agent: the attachment's intent ({@link ClusterAttachment.State#ATTACHING}), written before
   * ControllerPublishVolume, only while there is no attachment and the node claims the volume.
   *
   * @return the intent as stored (with its revision), or empty if nothing was written
   */
  Optional<ClusterAttachment> intendAttach(Leadership l, ClusterAttachment attaching);

  /**
   * As the controller agent: {@code to} over {@code from}, only if {@code from} is unchanged (its revision).
   *
   * @return {@code to} as stored, or empty if nothing was written
   */
  Optional<ClusterAttachment> updateAttachment(Leadership l, ClusterAttachment from, ClusterAttachment to);

  /**
   * As the controller agent: {@link ClusterAttachment.State#DETACHING}, only if {@code a} is unchanged and the node
   * has no claim of the volume left: from then on the node waits for a new attachment.
   *
   * @return the DETACHING attachment as stored, or empty if nothing was written
   */
  Optional<ClusterAttachment> markDetaching(Leadership l, ClusterAttachment a);

  /** As the controller agent, after ControllerUnpublishVolume succeeded: deletes {@code a} if unchanged. */
  boolean deleteAttachment(Leadership l, ClusterAttachment a);

  /**
   * The fence's first step, as the controller agent: {@code a} DETACHING, only while its node is lost (no node key,
   * no clean-stop marker) and {@code a} is unchanged.
   */
  default Optional<ClusterAttachment> beginFence(Leadership l, ClusterAttachment a) {
    return beginFence(l, a, false);
  }

  /**
   * The same; with {@code ordered}, for an operator's {@link DetachOrder}: while the node's key is absent and the
   * order is there (a clean stop does not stop it: the operator says the node is gone).
   */
  Optional<ClusterAttachment> beginFence(Leadership l, ClusterAttachment a, boolean ordered);

  /**
   * The fence's last step, after its unpublish (or with no attachment): the lost node's claims of the volume and the
   * attachment deleted, in one transaction that checks the node is still lost, the attachment is {@code a} as read
   * (or absent) and no claim of the node was put after {@code revision} (the snapshot the fence decided on).
   *
   * @return false if nothing was deleted (the node came back, a claim came, the attachment changed)
   */
  default boolean completeFence(Leadership l, String pluginId, String volumeId, String nodeId,
      Optional<ClusterAttachment> a, long revision) {
    return completeFence(l, pluginId, volumeId, nodeId, a, revision, false);
  }

  /** The same; with {@code ordered}, for an operator's {@link DetachOrder} (see {@link #beginFence}). */
  boolean completeFence(Leadership l, String pluginId, String volumeId, String nodeId, Optional<ClusterAttachment> a,
      long revision, boolean ordered);

  /** As the controller agent: remembers the plugin id's controller capabilities (see {@link VolumeClaims#controllerPublishes}). */
  void rememberCapabilities(Leadership l, Set<String> controllerCapabilities);
}
