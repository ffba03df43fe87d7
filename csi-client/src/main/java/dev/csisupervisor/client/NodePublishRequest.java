package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * {@code NodePublishVolume}'s request.
 *
 * @param volumeId the volume; not blank
 * @param publishContext what {@code ControllerPublishVolume} returned, or empty
 * @param stagingPath where the volume was staged; empty when the plugin does not stage
 * @param targetPath where the plugin publishes the volume (absolute; the plugin creates it, the CO
 *     makes its parent)
 * @param capability how the volume is accessed
 * @param readOnly whether the volume is published read-only
 * @param secrets {@code NODE_PUBLISH} secrets; never shown
 * @param volumeContext the volume's context, or empty
 */
public record NodePublishRequest(String volumeId, Map<String, String> publishContext, Optional<Path> stagingPath,
    Path targetPath, VolumeCapability capability, boolean readOnly, Secrets secrets,
    Map<String, String> volumeContext) {
  public NodePublishRequest {
    Values.requireNonBlank(volumeId, "volumeId");
    publishContext = Values.copyOf(publishContext, "publishContext");
    java.util.Objects.requireNonNull(stagingPath, "stagingPath");
    stagingPath.ifPresent(p -> Values.requireAbsolute(p, "stagingPath"));
    Values.requireAbsolute(targetPath, "targetPath");
    java.util.Objects.requireNonNull(capability, "capability");
    java.util.Objects.requireNonNull(secrets, "secrets");
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
  }
}
