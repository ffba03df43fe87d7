package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.List;

/**
 * The argument checks the in-memory driver's Controller and Node sides share, and the statuses
 * they fail with: {@code INVALID_ARGUMENT} for a missing or malformed field (the message names
 * it), {@code NOT_FOUND} for what does not exist, as the CSI spec v1.12.0 asks. Stateless.
 */
final class DriverChecks {

  /** Longest name accepted for a volume or snapshot. */
  static final int MAX_NAME_LENGTH = 128;

  private DriverChecks() {
  }

  /** A required single {@code volume_capability}, checked like every capability. */
  static void requireCapability(boolean present, VolumeCapability capability) {
    if (!present) {
      throw invalid("volume_capability is required");
    }
    checkCapabilities(List.of(capability), "volume_capability");
  }

  /** A required, non-empty {@code volume_capabilities} list. */
  static void requireCapabilities(List<VolumeCapability> capabilities) {
    if (capabilities.isEmpty()) {
      throw invalid("volume_capabilities must not be empty");
    }
    checkCapabilities(capabilities, "volume_capabilities");
  }

  static void checkCapabilities(List<VolumeCapability> caps, String field) {
    for (VolumeCapability c : caps) {
      if (c.getAccessTypeCase() == VolumeCapability.AccessTypeCase.ACCESSTYPE_NOT_SET) {
        throw invalid(field + ": access_type (mount or block) is required");
      }
      if (!c.hasAccessMode() || c.getAccessMode().getModeValue() == 0) {
        throw invalid(field + ": access_mode is required");
      }
    }
  }

  static void requireName(String field, String value) {
    if (value.isEmpty()) {
      throw invalid(field + " is required");
    }
    if (value.length() > MAX_NAME_LENGTH) {
      throw invalid(field + " is longer than " + MAX_NAME_LENGTH + " characters");
    }
  }

  static void requireId(String field, String value) {
    if (value.isEmpty()) {
      throw invalid(field + " is required");
    }
  }

  static StatusRuntimeException invalid(String message) {
    return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
  }

  static StatusRuntimeException notFound(String message) {
    return Status.NOT_FOUND.withDescription(message).asRuntimeException();
  }
}
