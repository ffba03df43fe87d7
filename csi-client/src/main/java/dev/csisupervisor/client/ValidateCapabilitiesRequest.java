package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code ValidateVolumeCapabilities}' request: whether an existing volume supports these capabilities.
 *
 * @param volumeId the volume; not blank
 * @param volumeContext its volume context, or empty
 * @param capabilities what to validate; at least one
 * @param parameters its create parameters, or empty
 * @param mutableParameters its mutable parameters, or empty
 * @param secrets secrets; never shown
 */
public record ValidateCapabilitiesRequest(String volumeId, Map<String, String> volumeContext,
    List<VolumeCapability> capabilities, Map<String, String> parameters, Map<String, String> mutableParameters,
    Secrets secrets) {
  public ValidateCapabilitiesRequest {
    Values.requireNonBlank(volumeId, "volumeId");
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
    capabilities = List.copyOf(Objects.requireNonNull(capabilities, "capabilities"));
    if (capabilities.isEmpty()) {
      throw new IllegalArgumentException("capabilities must not be empty");
    }
    parameters = Values.copyOf(parameters, "parameters");
    mutableParameters = Values.copyOf(mutableParameters, "mutableParameters");
    Objects.requireNonNull(secrets, "secrets");
  }

  /** These capabilities of {@code volumeId}, nothing else. */
  public static ValidateCapabilitiesRequest of(String volumeId, List<VolumeCapability> capabilities) {
    return new ValidateCapabilitiesRequest(volumeId, Map.of(), capabilities, Map.of(), Map.of(), Secrets.none());
  }
}
