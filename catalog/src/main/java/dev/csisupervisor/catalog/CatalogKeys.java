package dev.csisupervisor.catalog;

import dev.csisupervisor.registry.PluginKey;
import dev.csisupervisor.registry.PluginType;
import java.util.Optional;
import java.util.regex.Pattern;

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
  private static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9._-]{1,253}");
  private static final Pattern PREFIX = Pattern.compile("(/[A-Za-z0-9._-]+)+");

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
    if (!PREFIX.matcher(prefix).matches() || prefix.length() > 256) {
      throw new IllegalArgumentException("prefix must be /segment[/segment...] of A-Z a-z 0-9 . _ - (at most 256"
          + " characters, no trailing '/'), got '" + prefix + "'");
    }
    return prefix;
  }

  /** @throws IllegalArgumentException naming the bad node id */
  public static String checkNodeId(String nodeId) {
    if (nodeId == null) {
      throw new IllegalArgumentException("nodeId must not be null");
    }
    if (!NODE_ID.matcher(nodeId).matches() || nodeId.equals(".") || nodeId.equals("..")) {
      throw new IllegalArgumentException("nodeId must be 1 to 253 of A-Z a-z 0-9 . _ - (not '.' or '..'), got '" + nodeId + "'");
    }
    return nodeId;
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
    return NODE_ID.matcher(id).matches() ? Optional.of(id) : Optional.empty();
  }

  /** The node and registration key of a plugin key, or empty if {@code key} is not a well-formed one. */
  public Optional<PluginPath> parsePluginKey(String key) {
    if (!key.startsWith(pluginsRoot())) {
      return Optional.empty();
    }
    String[] parts = key.substring(pluginsRoot().length()).split("/", 4);
    if (parts.length != 4 || !NODE_ID.matcher(parts[2]).matches()) {
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
