package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.nio.file.Path;
import java.util.Map;

/**
 * {@code NodeStageVolume}'s request.
 *
 * @param volumeId the volume, as its controller named it; not blank
 * @param publishContext what {@code ControllerPublishVolume} returned, or empty
 * @param stagingPath the staging target path (absolute; the CO makes it, the plugin mounts onto it)
 * @param capability how the volume is accessed
 * @param secrets {@code NODE_STAGE} secrets; never shown
 * @param volumeContext the volume's context from {@code CreateVolume}, or empty
 */
public record NodeStageRequest(String volumeId, Map<String, String> publishContext, Path stagingPath,
    VolumeCapability capability, Secrets secrets, Map<String, String> volumeContext) {
  public NodeStageRequest {
    Values.requireNonBlank(volumeId, "volumeId");
    publishContext = Values.copyOf(publishContext, "publishContext");
    Values.requireAbsolute(stagingPath, "stagingPath");
    java.util.Objects.requireNonNull(capability, "capability");
    java.util.Objects.requireNonNull(secrets, "secrets");
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
  }
}
