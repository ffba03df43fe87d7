package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.registry.PluginType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The catalog at one etcd revision: every node entry and every registration. Immutable.
 *
 * @param revision the etcd revision this snapshot reflects
 * @param nodes node entries by node id (sorted)
 * @param entries every registration, sorted by type, name, node, alloc
 */
public record ClusterSnapshot(long revision, Map<String, NodeEntry> nodes, List<CatalogEntry> entries) {

  static final Comparator<CatalogEntry> ORDER = Comparator.comparing(CatalogEntry::name)
      .thenComparing(CatalogEntry::type).thenComparing(CatalogEntry::nodeId).thenComparing(CatalogEntry::allocId);

  public ClusterSnapshot {
    Bounds.atLeast(revision, 0, "revision");
    nodes = Collections.unmodifiableMap(new TreeMap<>(nodes));
    List<CatalogEntry> sorted = new ArrayList<>(entries);
    sorted.sort(ORDER);
    entries = List.copyOf(sorted);
  }

  /** A snapshot of the mirror's values: node entries (keyed here by node id) and registrations, in any order. */
  static ClusterSnapshot of(long revision, java.util.Collection<NodeEntry> nodes, java.util.Collection<CatalogEntry> entries) {
    Map<String, NodeEntry> byId = new TreeMap<>();
    nodes.forEach(n -> byId.put(n.nodeId(), n));
    return new ClusterSnapshot(revision, byId, new ArrayList<>(entries));
  }

  /** Every plugin name's counts, sorted by name; with {@code type} non-null only names that have that type. */
  public List<PluginSummary> plugins(PluginType type) {
    TreeSet<String> names = new TreeSet<>();
    for (CatalogEntry e : entries) {
      if (type == null || e.type() == type) {
        names.add(e.name());
      }
    }
    List<PluginSummary> out = new ArrayList<>();
    for (String n : names) {
      out.add(plugin(n).orElseThrow());
    }
    return out;
  }

  /** Every plugin name's counts, sorted by name. */
  public List<PluginSummary> plugins() {
    return plugins(null);
  }

  /** One plugin name's counts and registrations, if any node has it. */
  public Optional<PluginSummary> plugin(String name) {
    List<CatalogEntry> mine = entries.stream().filter(e -> e.name().equals(name)).toList();
    if (mine.isEmpty()) {
      return Optional.empty();
    }
    Set<String> ctrlExpected = new HashSet<>();
    Set<String> ctrlHealthy = new HashSet<>();
    Set<String> nodeExpected = new HashSet<>();
    Set<String> nodeHealthy = new HashSet<>();
    for (CatalogEntry e : mine) {
      boolean ctrl = e.type() == PluginType.CSI_CONTROLLER;
      (ctrl ? ctrlExpected : nodeExpected).add(e.nodeId());
      if (e.healthy()) {
        (ctrl ? ctrlHealthy : nodeHealthy).add(e.nodeId());
      }
    }
    return Optional.of(new PluginSummary(name, ctrlHealthy.size(), ctrlExpected.size(), nodeHealthy.size(),
        nodeExpected.size(), mine));
  }

  /** The registrations of one node, sorted by name, type, alloc. */
  public List<CatalogEntry> nodePlugins(String nodeId) {
    return entries.stream().filter(e -> e.nodeId().equals(nodeId)).toList();
  }

  /** Every node id that has a node entry or a registration, sorted. */
  public Set<String> nodeIds() {
    TreeSet<String> ids = new TreeSet<>(nodes.keySet());
    entries.forEach(e -> ids.add(e.nodeId()));
    return Collections.unmodifiableSet(ids);
  }
}
