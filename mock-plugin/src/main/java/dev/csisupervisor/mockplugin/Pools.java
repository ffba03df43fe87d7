package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.TopologyRequirement;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The storage pools of {@code --pools SEGMENT=SIZE,...} ({@link MockCsiPlugin.Builder#pools}): each a topology
 * segment {@value #KEY}{@code =SEGMENT} holding {@code SIZE} bytes. A volume is made in one pool (its
 * accessible_topology), chosen from the create's accessibility requirements (preferred first, then requisite; a
 * requisite limits the choice to its pools) or, without any, the pool with the most room; one that fits nowhere it
 * may go is {@code RESOURCE_EXHAUSTED} (CSI's "unable to provision in accessible_topology"). Immutable.
 */
final class Pools {
  /** The topology key of a pool's segment. */
  static final String KEY = "topology.mock.csi.dev/pool";

  private static final Pattern SIZE = Pattern.compile("(\\d+)(Ki|Mi|Gi|Ti|K|M|G|T)?");

  private final Map<String, Long> sizes;

  private Pools(Map<String, Long> sizes) {
    this.sizes = sizes;
  }

  static final Pools NONE = new Pools(Map.of());

  /**
   * {@code SEGMENT=SIZE,...}: SIZE in bytes or with a binary suffix (K or Ki = 1024, M/Mi, G/Gi, T/Ti).
   *
   * @throws IllegalArgumentException naming the entry that is malformed or repeated
   */
  static Pools parse(String spec) {
    Map<String, Long> sizes = new LinkedHashMap<>();
    for (String entry : spec.split(",")) {
      int eq = entry.lastIndexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("pools: expected SEGMENT=SIZE, got '" + entry + "'");
      }
      String segment = entry.substring(0, eq).strip();
      Matcher m = SIZE.matcher(entry.substring(eq + 1).strip());
      if (segment.isEmpty() || !m.matches()) {
        throw new IllegalArgumentException("pools: expected SEGMENT=SIZE (SIZE like 10Gi or 1048576), got '"
            + entry + "'");
      }
      long unit = switch (m.group(2) == null ? "" : m.group(2).substring(0, 1)) {
        case "K" -> 1L << 10;
        case "M" -> 1L << 20;
        case "G" -> 1L << 30;
        case "T" -> 1L << 40;
        default -> 1;
      };
      if (sizes.put(segment, Math.multiplyExact(Long.parseLong(m.group(1)), unit)) != null) {
        throw new IllegalArgumentException("pools: segment '" + segment + "' is given twice");
      }
    }
    return new Pools(Map.copyOf(sizes));
  }

  boolean isEmpty() {
    return sizes.isEmpty();
  }

  /** Pool -> size, in no particular order. */
  Map<String, Long> sizes() {
    return sizes;
  }

  /** The pool a topology names, if it names one of these. */
  Optional<String> poolOf(Map<String, String> segments) {
    String pool = segments.get(KEY);
    return pool != null && sizes.containsKey(pool) ? Optional.of(pool) : Optional.empty();
  }

  static Map<String, String> segment(String pool) {
    return Map.of(KEY, pool);
  }

  /** The bytes still free in {@code pool}, given what each pool's volumes take. */
  long free(String pool, Map<String, Long> used) {
    return Math.max(0, sizes.getOrDefault(pool, 0L) - used.getOrDefault(pool, 0L));
  }

  /**
   * The pool a new volume of {@code capacity} bytes goes to.
   *
   * @param requirements the create's accessibility requirements, or null
   * @param used what each pool's volumes take now
   * @throws io.grpc.StatusRuntimeException RESOURCE_EXHAUSTED naming the pools it may go to and their room
   */
  String choose(TopologyRequirement requirements, long capacity, Map<String, Long> used) {
    List<String> candidates = new ArrayList<>();
    if (requirements == null || requirements.getRequisiteCount() + requirements.getPreferredCount() == 0) {
      candidates.addAll(sizes.keySet());
      candidates.sort(Comparator.comparingLong((String p) -> free(p, used)).reversed()
          .thenComparing(Comparator.naturalOrder()));
    } else {
      List<Topology> order = new ArrayList<>(requirements.getPreferredList());
      order.addAll(requirements.getRequisiteList());
      List<String> allowed = requirements.getRequisiteList().stream()
          .map(t -> poolOf(t.getSegmentsMap())).flatMap(Optional::stream).toList();
      for (Topology t : order) {
        poolOf(t.getSegmentsMap()).filter(p -> !candidates.contains(p))
            .filter(p -> requirements.getRequisiteCount() == 0 || allowed.contains(p)).ifPresent(candidates::add);
      }
    }
    if (candidates.isEmpty()) {
      throw Status.RESOURCE_EXHAUSTED.withDescription("no pool of this plugin (" + new java.util.TreeMap<>(sizes)
          + ") is in accessibility_requirements (key " + KEY + ")").asRuntimeException();
    }
    for (String pool : candidates) {
      if (free(pool, used) >= capacity) {
        return pool;
      }
    }
    List<String> room = candidates.stream().map(p -> p + " has " + free(p, used) + " bytes free").toList();
    throw Status.RESOURCE_EXHAUSTED.withDescription("no pool has room for " + capacity + " bytes: "
        + String.join(", ", room)).asRuntimeException();
  }
}
