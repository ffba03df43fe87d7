package dev.csisupervisor.catalog;

import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginType;
import java.util.Optional;

/**
 * The catalog's key layout under one prefix:
 * <pre>
 *   &lt;prefix&gt;/nodes/&lt;nodeId&gt;
 *   &lt;prefix&gt;/plugins/&lt;type id&gt;/&lt;name&gt;/&lt;nodeId&gt;/&lt;allocId&gt;
 * </pre>
 * The plugin name and the node id never contain {@code /}; the alloc id is the last segment and may. Immutable.
 */
public final class CatalogKeys {
  public static final String DEFAULT_PREFIX = "/csi-supervisor";
  private static final int MAX_NODE_ID = 253;
  private static final int MAX_PREFIX = 256;

  private final String prefix;

  private CatalogKeys(String prefix) {
    this.prefix = prefix;
  }

  /**
   * Keys under {@code prefix}: {@code /segment[/segment...]} of {@code [A-Za-z0-9._-]}, no trailing slash.
   *
   * @throws IllegalArgumentException naming the prefix
   */
  public static CatalogKeys of(String prefix) {
    return new CatalogKeys(checkPrefix(prefix));
  }

  /** @throws IllegalArgumentException naming the bad prefix */
  public static String checkPrefix(String prefix) {
    if (prefix == null) {
      throw new IllegalArgumentException("prefix must not be null");
    }
    if (!isSegmentsPath(prefix) || prefix.length() > MAX_PREFIX) {
      throw new IllegalArgumentException("prefix must be /segment[/segment...] of " + PluginIds.CHARACTERS
          + " (at most " + MAX_PREFIX + " characters, no trailing '/'), got '" + prefix + "'");
    }
    return prefix;
  }

  /** @throws IllegalArgumentException naming the bad node id */
  public static String checkNodeId(String nodeId) {
    if (nodeId == null) {
      throw new IllegalArgumentException("nodeId must not be null");
    }
    if (!isNodeIdShape(nodeId) || nodeId.equals(".") || nodeId.equals("..")) {
      throw new IllegalArgumentException("nodeId must be 1 to " + MAX_NODE_ID + " of " + PluginIds.CHARACTERS
          + " (not '.' or '..'), got '" + nodeId + "'");
    }
    return nodeId;
  }

  /** 1 to {@value #MAX_NODE_ID} id characters. */
  private static boolean isNodeIdShape(String s) {
    return !s.isEmpty() && s.length() <= MAX_NODE_ID && PluginIds.onlyIdCharacters(s);
  }

  /** {@code /segment[/segment...]}, every segment non-empty and of id characters. */
  private static boolean isSegmentsPath(String path) {
    if (!path.startsWith("/")) {
      return false;
    }
    for (String segment : path.substring(1).split("/", -1)) {
      if (segment.isEmpty() || !PluginIds.onlyIdCharacters(segment)) {
        return false;
      }
    }
    return true;
  }

  public String prefix() {
    return prefix;
  }

  /** Everything of this catalog: {@code <prefix>/}. */
  public String root() {
    return prefix + "/";
  }

  public String nodesRoot() {
    return prefix + "/nodes/";
  }

  public String pluginsRoot() {
    return prefix + "/plugins/";
  }

  public String nodeKey(String nodeId) {
    return nodesRoot() + checkNodeId(nodeId);
  }

  public String pluginKey(String nodeId, PluginKey key) {
    return pluginsRoot() + key.type().id() + "/" + key.name() + "/" + checkNodeId(nodeId) + "/" + key.allocId();
  }

  /** A parsed plugin key: the node and the registration's key. */
  public record PluginPath(String nodeId, PluginKey key) {}

  /** The node id of a node key, or empty if {@code key} is not one. */
  public Optional<String> parseNodeKey(String key) {
    if (!key.startsWith(nodesRoot())) {
      return Optional.empty();
    }
    String id = key.substring(nodesRoot().length());
    return isNodeIdShape(id) ? Optional.of(id) : Optional.empty();
  }

  /** The node and registration key of a plugin key, or empty if {@code key} is not a well-formed one. */
  public Optional<PluginPath> parsePluginKey(String key) {
    if (!key.startsWith(pluginsRoot())) {
      return Optional.empty();
    }
    String[] parts = key.substring(pluginsRoot().length()).split("/", 4);
    if (parts.length != 4 || !isNodeIdShape(parts[2])) {
      return Optional.empty();
    }
    try {
      return Optional.of(new PluginPath(parts[2], new PluginKey(PluginType.parse(parts[0]), parts[1], parts[3])));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  @Override
  public String toString() {
    return prefix;
  }
}
