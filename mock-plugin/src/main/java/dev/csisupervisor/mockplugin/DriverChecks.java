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

  /** What a capability is made for, as kept with a volume: {@code "mount MODE"} or {@code "block MODE"}. */
  static String madeFor(VolumeCapability c) {
    return (c.hasBlock() ? "block " : "mount ") + c.getAccessMode().getModeValue();
  }

  /** {@link #madeFor} of each. */
  static java.util.Set<String> madeFor(List<VolumeCapability> caps) {
    java.util.Set<String> out = new java.util.LinkedHashSet<>();
    caps.forEach(c -> out.add(madeFor(c)));
    return out;
  }

  /** {@code "mount SINGLE_NODE_WRITER"} for a {@link #madeFor} key. */
  static String describeMadeFor(String key) {
    String[] f = key.split(" ");
    VolumeCapability.AccessMode.Mode mode = VolumeCapability.AccessMode.Mode.forNumber(Integer.parseInt(f[1]));
    return f[0] + " " + (mode == null ? f[1] : mode.name());
  }

  /**
   * ValidateVolumeCapabilities' answer for a volume made for {@code made} (empty: not known, everything confirmed):
   * confirmed if every capability asked is one it was made for, else no {@code confirmed} and a message naming what
   * it was not made for (CSI).
   */
  static dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse validate(String volumeId,
      java.util.Set<String> made, dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest r) {
    List<String> not = new java.util.ArrayList<>();
    if (!made.isEmpty()) {
      for (VolumeCapability c : r.getVolumeCapabilitiesList()) {
        if (!made.contains(madeFor(c))) {
          not.add(describeMadeFor(madeFor(c)));
        }
      }
    }
    if (!not.isEmpty()) {
      return dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse.newBuilder().setMessage("volume " + volumeId
          + " was made for " + made.stream().map(DriverChecks::describeMadeFor).toList() + ", not for " + not)
          .build();
    }
    return dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse.newBuilder()
        .setConfirmed(dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
            .putAllVolumeContext(r.getVolumeContextMap())
            .addAllVolumeCapabilities(r.getVolumeCapabilitiesList())
            .putAllParameters(r.getParametersMap())
            .putAllMutableParams(r.getMutableParamsMap()))
        .build();
  }

  /**
   * Mutable parameters a CreateVolume or ControllerModifyVolume sends: only keys of {@code accepted}
   * ({@code --mutable-parameters}); others are INVALID_ARGUMENT naming them (CSI).
   *
   * @param accepted the names the plugin accepts; empty: none (it has no MODIFY_VOLUME)
   */
  static void checkMutable(java.util.Set<String> accepted, java.util.Map<String, String> asked, String field) {
    List<String> unknown = asked.keySet().stream().filter(k -> !accepted.contains(k)).sorted().toList();
    if (!unknown.isEmpty()) {
      throw invalid(field + " " + unknown + " are not accepted: this plugin accepts "
          + (accepted.isEmpty() ? "no mutable parameters" : new java.util.TreeSet<>(accepted)));
    }
  }
}
