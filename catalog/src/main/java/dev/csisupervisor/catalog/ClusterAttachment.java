package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import dev.csisupervisor.common.Values;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A volume's controller publication to one node: {@code <prefix>/attachments/<plugin>/<vol>/<node>}, written by
 * the agent elected for the plugin id. Immutable.
 *
 * @param pluginId the plugin id
 * @param volumeId the volume
 * @param nodeId the agent's node id
 * @param csiNodeId the node id ControllerPublishVolume was sent for
 * @param state where it is
 * @param publishContext what ControllerPublishVolume answered (for stage and publish on the node)
 * @param message the last error, for {@link State#FAILED} (the RPC, the code, the plugin's words); else ""
 * @param controllerNodeId the agent that wrote it
 * @param since when it entered this state
 * @param attempts the CSI calls made for the state so far (ControllerPublishVolume while {@link State#ATTACHING},
 *     ControllerUnpublishVolume while {@link State#DETACHING} or clearing a {@link State#FAILED} one)
 * @param retryAt when the next call is due after a failed one (empty: at once)
 * @param revision the etcd mod revision of its key as read or written (0: not from etcd); not part of its value:
 *     every change the controller agent makes is conditional on it
 */
public record ClusterAttachment(String pluginId, String volumeId, String nodeId, String csiNodeId, State state,
    Map<String, String> publishContext, String message, String controllerNodeId, Instant since, int attempts,
    Optional<Instant> retryAt, long revision) {

  /**
   * The attachment's state. Every attachment that was ever {@link #ATTACHING} ends with a ControllerUnpublishVolume
   * before its key goes: nothing is attached in the cloud that no key records.
   */
  public enum State {
    /**
     * The intent, written before ControllerPublishVolume is sent: a publish uncertain, timed out or cut short by a
     * crash is sent again while a claim wants it, and undone by an unpublish once none does.
     */
    ATTACHING,
    /** ControllerPublishVolume succeeded: the node may stage and publish. */
    ATTACHED,
    /**
     * ControllerPublishVolume answered a final error (NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, ...); a
     * node whose claim is older than this attachment fails its mount with {@link #message()}. Cleared only through a
     * ControllerUnpublishVolume (the publish may have done part of its work), retried with backoff, once a newer
     * claim asks again or no claim is left.
     */
    FAILED,
    /** The node has no claim left: ControllerUnpublishVolume is being called; then the key is deleted. */
    DETACHING
  }

  /** A new attachment value (no call made for it yet, not from etcd). */
  public ClusterAttachment(String pluginId, String volumeId, String nodeId, String csiNodeId, State state,
      Map<String, String> publishContext, String message, String controllerNodeId, Instant since) {
    this(pluginId, volumeId, nodeId, csiNodeId, state, publishContext, message, controllerNodeId, since, 0,
        Optional.empty(), 0);
  }

  public ClusterAttachment {
    CsiIds.checkPlugin("pluginId", pluginId);
    CsiIds.checkVolume("volumeId", volumeId);
    CatalogKeys.checkNodeId(nodeId);
    Objects.requireNonNull(csiNodeId, "csiNodeId");
    Objects.requireNonNull(state, "state");
    publishContext = Values.copyOf(publishContext, "publishContext");
    Objects.requireNonNull(message, "message");
    CatalogKeys.checkNodeId(controllerNodeId);
    Objects.requireNonNull(since, "since");
    if (attempts < 0) {
      throw new IllegalArgumentException("attempts must be >= 0, got " + attempts);
    }
    Objects.requireNonNull(retryAt, "retryAt");
    if (revision < 0) {
      throw new IllegalArgumentException("revision must be >= 0, got " + revision);
    }
  }

  /** The same value at another etcd revision. */
  public ClusterAttachment withRevision(long revision) {
    return new ClusterAttachment(pluginId, volumeId, nodeId, csiNodeId, state, publishContext, message,
        controllerNodeId, since, attempts, retryAt, revision);
  }

  /**
   * The next value: {@code state} since {@code now}, written by {@code controller}; the attempts go on counting while
   * the state stays, and start again with a new one.
   */
  public ClusterAttachment next(State state, Map<String, String> publishContext, String message, String controller,
      Instant now, Optional<Instant> retryAt) {
    int n = state == this.state ? attempts : 0;
    return new ClusterAttachment(pluginId, volumeId, nodeId, csiNodeId, state, publishContext, message, controller,
        state == this.state ? since : now, n, retryAt, revision);
  }

  /** The same value with one more call made. */
  public ClusterAttachment attempted() {
    return new ClusterAttachment(pluginId, volumeId, nodeId, csiNodeId, state, publishContext, message,
        controllerNodeId, since, attempts + 1, retryAt, revision);
  }

  /** Whether a call for it is due at {@code now} (no retry time, or passed). */
  public boolean due(Instant now) {
    return retryAt.map(t -> !t.isAfter(now)).orElse(true);
  }
}
