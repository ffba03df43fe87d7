package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code CreateVolume}'s request.
 *
 * @param name the CO's name for the volume, the idempotency key; not blank
 * @param capacityRange the size, or empty for the plugin's default (with a content source: the source's size)
 * @param capabilities what the volume must support; at least one
 * @param parameters opaque parameters for the plugin, or empty
 * @param secrets {@code CREATE_VOLUME} secrets; never shown
 * @param accessibilityRequirements where the volume must (and should) be accessible from; empty: the plugin
 *     chooses. CSI: only for a plugin with {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}
 * @param contentSource what to pre-populate it from ({@code volume_content_source}); empty: an empty volume
 * @param mutableParameters parameters a later {@code ControllerModifyVolume} may change, taking precedence over
 *     {@code parameters} (CSI's {@code mutable_parameters}; only for a plugin with {@code MODIFY_VOLUME}), or empty
 */
public record CreateVolumeRequest(String name, Optional<CapacityRange> capacityRange,
    List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets,
    Optional<TopologyRequirement> accessibilityRequirements, Optional<ContentSource> contentSource,
    Map<String, String> mutableParameters) {
  public CreateVolumeRequest {
    Values.requireNonBlank(name, "name");
    Objects.requireNonNull(capacityRange, "capacityRange");
    capabilities = List.copyOf(Objects.requireNonNull(capabilities, "capabilities"));
    if (capabilities.isEmpty()) {
      throw new IllegalArgumentException("capabilities must not be empty");
    }
    parameters = Values.copyOf(parameters, "parameters");
    Objects.requireNonNull(secrets, "secrets");
    Objects.requireNonNull(accessibilityRequirements, "accessibilityRequirements");
    Objects.requireNonNull(contentSource, "contentSource");
    mutableParameters = ControllerArguments.mutableParameters(mutableParameters, false);
  }

  /** Without a content source or mutable parameters. */
  public CreateVolumeRequest(String name, Optional<CapacityRange> capacityRange, List<VolumeCapability> capabilities,
      Map<String, String> parameters, Secrets secrets, Optional<TopologyRequirement> accessibilityRequirements) {
    this(name, capacityRange, capabilities, parameters, secrets, accessibilityRequirements, Optional.empty(), Map.of());
  }

  /** Without accessibility requirements, a content source or mutable parameters. */
  public CreateVolumeRequest(String name, Optional<CapacityRange> capacityRange, List<VolumeCapability> capabilities,
      Map<String, String> parameters, Secrets secrets) {
    this(name, capacityRange, capabilities, parameters, secrets, Optional.empty());
  }

  /** The same request pre-populated from {@code source}. */
  public CreateVolumeRequest withContentSource(ContentSource source) {
    return new CreateVolumeRequest(name, capacityRange, capabilities, parameters, secrets, accessibilityRequirements,
        Optional.of(Objects.requireNonNull(source, "contentSource")), mutableParameters);
  }

  /** The same request with these mutable parameters (replacing any). */
  public CreateVolumeRequest withMutableParameters(Map<String, String> mutable) {
    return new CreateVolumeRequest(name, capacityRange, capabilities, parameters, secrets, accessibilityRequirements,
        contentSource, mutable);
  }
}
