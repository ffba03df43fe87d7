package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import dev.csisupervisor.common.Values;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

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
 */
public record ClusterAttachment(String pluginId, String volumeId, String nodeId, String csiNodeId, State state,
    Map<String, String> publishContext, String message, String controllerNodeId, Instant since) {

  /** The attachment's state. */
  public enum State {
    /** ControllerPublishVolume succeeded: the node may stage and publish. */
    ATTACHED,
    /**
     * ControllerPublishVolume answered a final error (NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, ...); the
     * waiting node fails its mount with {@link #message()}. Tried again while the claims stay.
     */
    FAILED,
    /** The node has no claim left: ControllerUnpublishVolume is being called; then the key is deleted. */
    DETACHING
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
  }
}
