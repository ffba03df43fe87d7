package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * {@code GetCapacity}'s request: the room for volumes with these capabilities and parameters, in this topology.
 *
 * @param capabilities the capabilities the volumes would have; empty: any
 * @param parameters the create parameters they would have; empty: none
 * @param accessibleTopology the topology segments to ask about ({@code VOLUME_ACCESSIBILITY_CONSTRAINTS}); empty:
 *     the whole plugin. A present map must not be empty
 */
public record CapacityRequest(List<VolumeCapability> capabilities, Map<String, String> parameters,
    Optional<Map<String, String>> accessibleTopology) {
  public CapacityRequest {
    capabilities = List.copyOf(Objects.requireNonNull(capabilities, "capabilities"));
    parameters = Values.copyOf(parameters, "parameters");
    Objects.requireNonNull(accessibleTopology, "accessibleTopology");
    accessibleTopology = accessibleTopology.map(t -> {
      Map<String, String> copy = Values.copyOf(t, "accessibleTopology");
      if (copy.isEmpty()) {
        throw new IllegalArgumentException("accessibleTopology must not be an empty segment map (leave it empty)");
      }
      return copy;
    });
  }

  /** The whole plugin's capacity, for any volume. */
  public static CapacityRequest any() {
    return new CapacityRequest(List.of(), Map.of(), Optional.empty());
  }

  /** The capacity in one topology segment set, for any volume. */
  public static CapacityRequest in(Map<String, String> segments) {
    return new CapacityRequest(List.of(), Map.of(), Optional.of(segments));
  }
}
