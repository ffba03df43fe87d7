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

  /**
   * For a create without topology (issue 37: {@code preferred} = the segments with room, most first): the segments
   * of {@code readings} whose answer for {@code parameters} (else for none) has at least {@code requiredBytes}
   * available and, if the plugin said one, a maximum volume size of at least that; the most room first (ties by
   * segment key). Readings without topology are left out (there is nothing to prefer).
   *
   * @throws IllegalArgumentException if {@code requiredBytes} is negative
   */
  public static List<Map<String, String>> segmentsWithRoom(List<CapacityReading> readings,
      Map<String, String> parameters, long requiredBytes) {
    if (requiredBytes < 0) {
      throw new IllegalArgumentException("requiredBytes must not be negative, got " + requiredBytes);
    }
    record Room(CapacityReading reading, long available) {}
    List<Room> rooms = new ArrayList<>();
    for (CapacityReading r : readings) {
      java.util.Optional<Entry> e = r.entry(parameters).or(() -> r.entry(Map.of()));
      if (r.topology().isEmpty() || e.isEmpty() || e.get().availableBytes() < requiredBytes
          || (e.get().maximumVolumeSize().isPresent() && e.get().maximumVolumeSize().getAsLong() < requiredBytes)) {
        continue;
      }
      rooms.add(new Room(r, e.get().availableBytes()));
    }
    rooms.sort(java.util.Comparator.comparingLong(Room::available).reversed()
        .thenComparing(x -> x.reading().segmentKey()));
    return rooms.stream().map(x -> x.reading().topology()).toList();
  }

  /** The readings in words, for an error ({@code {zone=a}: 5368709120 bytes free (read T); ...}). */
  public static String describe(List<CapacityReading> readings, Map<String, String> parameters) {
    List<String> out = new ArrayList<>();
    for (CapacityReading r : readings) {
      r.entry(parameters).or(() -> r.entry(Map.of())).ifPresent(e -> out.add((r.topology().isEmpty() ? "the plugin"
          : r.topology().toString()) + ": " + e.availableBytes() + " bytes free"
          + (e.maximumVolumeSize().isPresent() ? ", volumes up to " + e.maximumVolumeSize().getAsLong() + " bytes" : "")
          + " (read " + r.since() + ")"));
    }
    return out.isEmpty() ? "no capacity read" : String.join("; ", out);
  }
}
