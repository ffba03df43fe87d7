package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.Map;

/**
 * {@code ControllerPublishVolume}'s request.
 *
 * @param volumeId the volume; not blank
 * @param nodeId the node's id as its node plugin reported it ({@code NodeGetInfo}); not blank
 * @param capability how the volume will be accessed on the node
 * @param readOnly whether it is published read-only
 * @param secrets {@code CONTROLLER_PUBLISH} secrets; never shown
 * @param volumeContext the volume's context, or empty
 */
public record ControllerPublishRequest(String volumeId, String nodeId, VolumeCapability capability,
    boolean readOnly, Secrets secrets, Map<String, String> volumeContext) {
  public ControllerPublishRequest {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireNonBlank(nodeId, "nodeId");
    java.util.Objects.requireNonNull(capability, "capability");
    java.util.Objects.requireNonNull(secrets, "secrets");
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
  }
}
