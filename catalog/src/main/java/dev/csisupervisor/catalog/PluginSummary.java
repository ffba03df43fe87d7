package dev.csisupervisor.catalog;

import java.util.List;

/**
 * One plugin name across the cluster, as {@code nomad plugin status} shows it. A node counts once per type
 * however many allocations of the plugin it runs: "expected" when it has at least one registration of that
 * type, "healthy" when at least one of them is healthy.
 *
 * @param name the plugin name
 * @param controllersHealthy nodes with a healthy controller registration
 * @param controllersExpected nodes with any controller registration
 * @param nodesHealthy nodes with a healthy node registration
 * @param nodesExpected nodes with any node registration
 * @param entries every registration of the name, sorted by type, node, alloc
 */
public record PluginSummary(
    String name,
    int controllersHealthy,
    int controllersExpected,
    int nodesHealthy,
    int nodesExpected,
    List<CatalogEntry> entries) {
  public PluginSummary {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank");
    }
    entries = List.copyOf(entries);
  }

  /** Every expected controller and node is healthy. */
  public boolean allHealthy() {
    return controllersHealthy == controllersExpected && nodesHealthy == nodesExpected;
  }
}
