package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.nio.file.Path;
import java.util.Optional;

/**
 * {@code NodeExpandVolume}'s request.
 *
 * @param volumeId the volume; not blank
 * @param volumePath a path where the volume is published (absolute)
 * @param capacityRange the new size
 * @param stagingPath where the volume is staged, if it is
 * @param capability how the volume is accessed, if known
 * @param secrets {@code NODE_EXPAND} secrets; never shown
 */
public record NodeExpandRequest(String volumeId, Path volumePath, CapacityRange capacityRange,
    Optional<Path> stagingPath, Optional<VolumeCapability> capability, Secrets secrets) {
  public NodeExpandRequest {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(volumePath, "volumePath");
    java.util.Objects.requireNonNull(capacityRange, "capacityRange");
    java.util.Objects.requireNonNull(stagingPath, "stagingPath");
    stagingPath.ifPresent(p -> Values.requireAbsolute(p, "stagingPath"));
    java.util.Objects.requireNonNull(capability, "capability");
    java.util.Objects.requireNonNull(secrets, "secrets");
  }
}
