package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import dev.csisupervisor.common.Values;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * What GetCapacity answered for one topology segment of a plugin id, per parameter set in use, as its controller
 * agent last read it ({@code <prefix>/capacity/<plugin>/<segment>}). Immutable.
 *
 * @param pluginId the plugin id
 * @param topology the segment asked about (CSI {@code accessible_topology}); empty: the whole plugin, asked without
 *     topology
 * @param entries per parameter set (the empty set first), the answer
 * @param since when these values were read (first; rewritten only when they change)
 */
public record CapacityReading(String pluginId, Map<String, String> topology, List<Entry> entries, Instant since) {

  /** The key segment of a reading without topology. */
  public static final String NO_TOPOLOGY = "-";

  /**
   * GetCapacity's answer for volumes made with {@code parameters}.
   *
   * @param availableBytes CSI {@code available_capacity}
   * @param maximumVolumeSize CSI {@code maximum_volume_size}, if answered
   */
  public record Entry(Map<String, String> parameters, long availableBytes, OptionalLong maximumVolumeSize) {
    public Entry {
      parameters = Values.copyOf(parameters, "parameters");
      if (availableBytes < 0) {
        throw new IllegalArgumentException("availableBytes must not be negative, got " + availableBytes);
      }
      if (maximumVolumeSize == null) {
        throw new IllegalArgumentException("maximumVolumeSize must not be null (OptionalLong.empty() if not answered)");
      }
      if (maximumVolumeSize.isPresent() && maximumVolumeSize.getAsLong() < 0) {
        throw new IllegalArgumentException("maximumVolumeSize must not be negative, got " + maximumVolumeSize);
      }
    }
  }

  public CapacityReading {
    CsiIds.checkPlugin("pluginId", pluginId);
    topology = java.util.Collections.unmodifiableMap(new TreeMap<>(Values.copyOf(topology, "topology")));
    if (entries == null) {
      throw new IllegalArgumentException("entries must not be null");
    }
    List<Entry> copy = new ArrayList<>();
    for (int i = 0; i < entries.size(); i++) {
      if (entries.get(i) == null) {
        throw new IllegalArgumentException("entries[" + i + "] must not be null");
      }
      copy.add(entries.get(i));
    }
    entries = List.copyOf(copy);
    if (since == null) {
      throw new IllegalArgumentException("since must not be null");
    }
  }

  /** The key segment: {@code k=v,k2=v2} (sorted) escaped ({@link CatalogKeys#escape}), or {@value #NO_TOPOLOGY}. */
  public String segmentKey() {
    return segmentKey(topology);
  }

  /** The key segment of {@code topology} (empty: {@value #NO_TOPOLOGY}). */
  public static String segmentKey(Map<String, String> topology) {
    if (topology.isEmpty()) {
      return NO_TOPOLOGY;
    }
    StringBuilder b = new StringBuilder();
    new TreeMap<>(topology).forEach((k, v) -> b.append(b.length() == 0 ? "" : ",").append(k).append('=').append(v));
    return CatalogKeys.escape(b.toString());
  }

  /** The answer for volumes made with {@code parameters}, if it was asked. */
  public java.util.Optional<Entry> entry(Map<String, String> parameters) {
    return entries.stream().filter(e -> e.parameters().equals(parameters)).findFirst();
  }

  /** Whether {@code other} says the same (segment and answers), whenever it was read. */
  public boolean sameAs(CapacityReading other) {
    return other != null && pluginId.equals(other.pluginId) && topology.equals(other.topology)
        && entries.equals(other.entries);
  }
}
