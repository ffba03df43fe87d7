package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * {@code CreateVolume}'s request (no content source).
 *
 * @param name the CO's name for the volume, the idempotency key; not blank
 * @param capacityRange the size, or empty for the plugin's default
 * @param capabilities what the volume must support; at least one
 * @param parameters opaque parameters for the plugin, or empty
 * @param secrets {@code CREATE_VOLUME} secrets; never shown
 * @param accessibilityRequirements where the volume must (and should) be accessible from; empty: the plugin
 *     chooses. CSI: only for a plugin with {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}
 */
public record CreateVolumeRequest(String name, Optional<CapacityRange> capacityRange,
    List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets,
    Optional<TopologyRequirement> accessibilityRequirements) {
  public CreateVolumeRequest {
    Values.requireNonBlank(name, "name");
    java.util.Objects.requireNonNull(capacityRange, "capacityRange");
    capabilities = List.copyOf(java.util.Objects.requireNonNull(capabilities, "capabilities"));
    if (capabilities.isEmpty()) {
      throw new IllegalArgumentException("capabilities must not be empty");
    }
    parameters = Values.copyOf(parameters, "parameters");
    java.util.Objects.requireNonNull(secrets, "secrets");
    java.util.Objects.requireNonNull(accessibilityRequirements, "accessibilityRequirements");
  }

  /** Without accessibility requirements. */
  public CreateVolumeRequest(String name, Optional<CapacityRange> capacityRange, List<VolumeCapability> capabilities,
      Map<String, String> parameters, Secrets secrets) {
    this(name, capacityRange, capabilities, parameters, secrets, Optional.empty());
  }
}
