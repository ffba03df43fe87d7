package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.util.Objects;

/**
 * One change of the cluster view. Exactly one of {@code plugin} and {@code node} is non-null: the entry after
 * the change, or for a removal the entry that was removed.
 *
 * @param sequence this view's event number: 1, 2, 3, ... without gaps
 * @param revision the etcd revision of the change (for changes found by a re-list: the list's revision)
 * @param kind what happened
 * @param plugin the registration, for PLUGIN_* kinds
 * @param node the node entry, for NODE_* kinds
 */
public record ClusterEvent(long sequence, long revision, Kind kind, CatalogEntry plugin, NodeEntry node) {

  /** What changed. */
  public enum Kind { NODE_ADDED, NODE_UPDATED, NODE_REMOVED, PLUGIN_ADDED, PLUGIN_UPDATED, PLUGIN_REMOVED }

  public ClusterEvent {
    Bounds.atLeast(sequence, 1, "sequence");
    Objects.requireNonNull(kind, "kind");
    boolean pluginKind = kind.name().startsWith("PLUGIN_");
    if (pluginKind ? plugin == null || node != null : node == null || plugin != null) {
      throw new IllegalArgumentException(kind + " needs exactly " + (pluginKind ? "plugin" : "node"));
    }
  }

  /** The node the change is about. */
  public String nodeId() {
    return plugin != null ? plugin.nodeId() : node.nodeId();
  }
}
