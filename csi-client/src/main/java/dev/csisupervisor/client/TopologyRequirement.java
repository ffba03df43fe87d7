package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * CSI's {@code TopologyRequirement} of a {@code CreateVolume}: where the new volume must be accessible from
 * ({@code requisite}: from at least one of them) and where the CO would prefer it ({@code preferred}, in order).
 * Each topology is a segment map ({@code zone -> Z1}). Immutable; maps sorted.
 *
 * @param requisite the topologies it must be accessible from; empty: anywhere the plugin likes
 * @param preferred the topologies to try first, in order; with a requisite, each must be one of it (CSI)
 */
public record TopologyRequirement(List<Map<String, String>> requisite, List<Map<String, String>> preferred) {
  public TopologyRequirement {
    requisite = copy(requisite, "requisite");
    preferred = copy(preferred, "preferred");
    if (requisite.isEmpty() && preferred.isEmpty()) {
      throw new IllegalArgumentException("requisite or preferred must be given (CSI), got both empty");
    }
    for (Map<String, String> p : preferred) {
      if (!requisite.isEmpty() && !requisite.contains(p)) {
        throw new IllegalArgumentException("preferred topology " + p + " must also be in requisite " + requisite
            + " (CSI)");
      }
    }
  }

  /** One topology, both required and preferred: the volume where that segment set is (this node's). */
  public static TopologyRequirement of(Map<String, String> segments) {
    return new TopologyRequirement(List.of(segments), List.of(segments));
  }

  private static List<Map<String, String>> copy(List<Map<String, String>> topologies, String field) {
    Objects.requireNonNull(topologies, field);
    return topologies.stream().<Map<String, String>>map(t -> {
      Map<String, String> m = Values.copyOf(t, field);
      if (m.isEmpty()) {
        throw new IllegalArgumentException(field + " must not hold an empty topology");
      }
      return m;
    }).toList();
  }
}
