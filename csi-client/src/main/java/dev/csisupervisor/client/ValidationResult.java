package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What {@code ValidateVolumeCapabilities} answered: confirmed (what the plugin validated) or not, with the plugin's
 * message. CSI: {@code confirmed} is set only when every capability asked is supported; a caller should also check
 * that the confirmed capabilities are the ones it asked.
 *
 * @param confirmed what the plugin confirmed; empty: not supported
 * @param message the plugin's explanation (mostly when not confirmed); may be empty
 */
public record ValidationResult(Optional<Confirmed> confirmed, String message) {
  public ValidationResult {
    Objects.requireNonNull(confirmed, "confirmed");
    Objects.requireNonNull(message, "message");
  }

  /** Whether the plugin confirmed the volume supports what was asked. */
  public boolean isConfirmed() {
    return confirmed.isPresent();
  }

  /** CSI's {@code ValidateVolumeCapabilitiesResponse.Confirmed}. */
  public record Confirmed(List<VolumeCapability> capabilities, Map<String, String> volumeContext,
      Map<String, String> parameters, Map<String, String> mutableParameters) {
    public Confirmed {
      capabilities = List.copyOf(Objects.requireNonNull(capabilities, "capabilities"));
      volumeContext = Values.copyOf(volumeContext, "volumeContext");
      parameters = Values.copyOf(parameters, "parameters");
      mutableParameters = Values.copyOf(mutableParameters, "mutableParameters");
    }
  }
}
