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
 *   &lt;prefix&gt;/volumes/&lt;plugin&gt;/&lt;vol&gt;
 *   &lt;prefix&gt;/claims/&lt;nodeId&gt;/&lt;plugin&gt;/&lt;vol&gt;/&lt;alloc&gt;
 *   &lt;prefix&gt;/claimguards/&lt;plugin&gt;/&lt;vol&gt;
 *   &lt;prefix&gt;/attachments/&lt;plugin&gt;/&lt;vol&gt;/&lt;nodeId&gt;
 *   &lt;prefix&gt;/controllers/&lt;plugin&gt;
 *   &lt;prefix&gt;/requests/&lt;plugin&gt;/create/&lt;name&gt;
 *   &lt;prefix&gt;/requests/&lt;plugin&gt;/delete/&lt;vol&gt;
 *   &lt;prefix&gt;/stopped/&lt;nodeId&gt;
 *   &lt;prefix&gt;/detaches/&lt;nodeId&gt;
 *   &lt;prefix&gt;/capabilities/&lt;plugin&gt;
 *   &lt;prefix&gt;/conditions/&lt;plugin&gt;/&lt;vol&gt;
 *   &lt;prefix&gt;/leaks/&lt;plugin&gt;
 *   &lt;prefix&gt;/capacity/&lt;plugin&gt;/&lt;segment&gt;
 * </pre>
 * The plugin name and the node id never contain {@code /}; the alloc id of a plugin key is the last segment and
 * may. A volume id (any id CSI allows, {@code /} included) and a claim's alloc id are written escaped
 * ({@link #escape}: every byte outside {@code A-Z a-z 0-9 . _ -} as {@code %XX}), so each is one segment and
 * the usual ids read as they are.
 *
 * <p>A node writes only under {@code claims/<its node id>/} (and the shared {@code claimguards/}, whose keys
 * hold nothing but a revision), so etcd's range permissions can confine each node's user to its own claims: one
 * node can neither take another's claim away nor write an attachment (README "Cluster volumes", the etcd roles).
 * Immutable.
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

  public String volumesRoot() {
    return prefix + "/volumes/";
  }

  public String claimsRoot() {
    return prefix + "/claims/";
  }

  public String attachmentsRoot() {
    return prefix + "/attachments/";
  }

  public String controllersRoot() {
    return prefix + "/controllers/";
  }

  /** {@code <prefix>/volumes/<plugin>/<vol>}. */
  public String volumeKey(String pluginId, String volumeId) {
    return volumesRoot() + pluginId + "/" + escape(volumeId);
  }

  /** Every claim of one node: {@code <prefix>/claims/<node>/}, the range a node's etcd user may write. */
  public String nodeClaimsRoot(String nodeId) {
    return claimsRoot() + checkNodeId(nodeId) + "/";
  }

  /** Every claim of one volume on one node: {@code <prefix>/claims/<node>/<plugin>/<vol>/}. */
  public String nodeClaimsPrefix(String pluginId, String volumeId, String nodeId) {
    return nodeClaimsRoot(nodeId) + pluginId + "/" + escape(volumeId) + "/";
  }

  public String claimKey(String pluginId, String volumeId, String nodeId, String allocId) {
    return nodeClaimsPrefix(pluginId, volumeId, nodeId) + escape(allocId);
  }

  public String claimGuardsRoot() {
    return prefix + "/claimguards/";
  }

  /**
   * {@code <prefix>/claimguards/<plugin>/<vol>}: put by every claim of the volume, in the claim's transaction,
   * which compares it unchanged since the claims were read; so two claims decided on the same claims cannot both
   * be written, though the claims themselves are under each node's own prefix. Its value lists the volume's claim
   * keys (relative to the claims root, one per line), so that a claim reads only its volume's claims.
   */
  public String claimGuardKey(String pluginId, String volumeId) {
    return claimGuardsRoot() + pluginId + "/" + escape(volumeId);
  }

  /** Every attachment of one volume: {@code <prefix>/attachments/<plugin>/<vol>/}. */
  public String volumeAttachmentsPrefix(String pluginId, String volumeId) {
    return attachmentsRoot() + pluginId + "/" + escape(volumeId) + "/";
  }

  public String attachmentKey(String pluginId, String volumeId, String nodeId) {
    return volumeAttachmentsPrefix(pluginId, volumeId) + checkNodeId(nodeId);
  }

  /** The catalog entries of one plugin id's plugins of one type: {@code <prefix>/plugins/<type>/<plugin>/}. */
  public String pluginEntriesPrefix(PluginType type, String pluginId) {
    return pluginsRoot() + type.id() + "/" + pluginId + "/";
  }

  public String requestsRoot() {
    return prefix + "/requests/";
  }

  /**
   * A request: {@code <prefix>/requests/<plugin>/<kind>/<name>} ({@link ClusterVolumeRequest.Kind#segment}; the
   * name escaped): {@code .../create/<volume name>}, {@code .../delete/<vol>}, {@code .../snapshot/<snapshot name>},
   * {@code .../snapshot-delete/<snapshot id>}, {@code .../modify/<vol>}, {@code .../register/<vol>}.
   */
  public String requestKey(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    return requestsPrefix(kind, pluginId) + escape(name);
  }

  /** Every request of one kind of a plugin id: {@code <prefix>/requests/<plugin>/<kind>/}. */
  public String requestsPrefix(ClusterVolumeRequest.Kind kind, String pluginId) {
    return requestsRoot() + pluginId + "/" + kind.segment() + "/";
  }

  /** Snapshots the controller agents recorded: {@code <prefix>/snapshots/}. */
  public String snapshotsRoot() {
    return prefix + "/snapshots/";
  }

  /** Every recorded snapshot of a plugin id: {@code <prefix>/snapshots/<plugin>/}. */
  public String snapshotsPrefix(String pluginId) {
    return snapshotsRoot() + dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId) + "/";
  }

  /** {@code <prefix>/snapshots/<plugin>/<id>} (the id escaped): {@link ClusterVolumeSnapshot}. */
  public String snapshotKey(String pluginId, String snapshotId) {
    return snapshotsPrefix(pluginId) + escape(dev.csisupervisor.common.CsiIds.checkVolume("snapshotId", snapshotId));
  }

  /** Operators' orders to detach a node that is gone: {@code <prefix>/detaches/}. */
  public String detachesRoot() {
    return prefix + "/detaches/";
  }

  /** {@code <prefix>/detaches/<node>} ({@link DetachOrder}). */
  public String detachOrderKey(String nodeId) {
    return detachesRoot() + checkNodeId(nodeId);
  }

  /** Nodes whose agent stopped cleanly with its mounts kept: {@code <prefix>/stopped/}. */
  public String stoppedRoot() {
    return prefix + "/stopped/";
  }

  /** {@code <prefix>/stopped/<node>}: not on any lease; deleted when the agent starts again. */
  public String stoppedKey(String nodeId) {
    return stoppedRoot() + checkNodeId(nodeId);
  }

  /**
   * {@code <prefix>/capabilities/<plugin>}: the controller capabilities the plugin id's controller agent last saw,
   * not on any lease, so that whether a mount waits for a controller publish is known while no controller runs.
   */
  public String capabilitiesKey(String pluginId) {
    return capabilitiesRoot() + dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
  }

  public String capabilitiesRoot() {
    return prefix + "/capabilities/";
  }

  /** The election key of the controller agent of a plugin id. */
  public String controllerKey(String pluginId) {
    return controllersRoot() + pluginId;
  }

  /**
   * One key segment for any string: UTF-8 bytes outside {@code A-Z a-z 0-9 . _ -} as {@code %XX} (upper-case
   * hex), the rest as they are; so {@code /} never splits a key and distinct ids give distinct segments.
   */
  public static String escape(String s) {
    byte[] b = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder(b.length);
    for (byte x : b) {
      char c = (char) (x & 0xff);
      if (x >= 0 && PluginIds.onlyIdCharacters(String.valueOf(c))) {
        out.append(c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit((x >> 4) & 0xf, 16)))
            .append(Character.toUpperCase(Character.forDigit(x & 0xf, 16)));
      }
    }
    return out.toString();
  }

  /**
   * The string {@link #escape} wrote.
   *
   * @throws IllegalArgumentException if {@code segment} is not one {@link #escape} writes
   */
  public static String unescape(String segment) {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(segment.length());
    for (int i = 0; i < segment.length(); i++) {
      char c = segment.charAt(i);
      if (c == '%' && i + 2 < segment.length()) {
        int hi = Character.digit(segment.charAt(i + 1), 16);
        int lo = Character.digit(segment.charAt(i + 2), 16);
        if (hi < 0 || lo < 0) {
          throw new IllegalArgumentException("bad escape at " + i + " in '" + segment + "'");
        }
        out.write(hi << 4 | lo);
        i += 2;
      } else if (c != '%' && PluginIds.onlyIdCharacters(String.valueOf(c))) {
        out.write(c);
      } else {
        throw new IllegalArgumentException("'" + c + "' at " + i + " is not allowed in the key segment '" + segment + "'");
      }
    }
    return out.toString(java.nio.charset.StandardCharsets.UTF_8);
  }

  /** A parsed claim key. */
  public record ClaimPath(String pluginId, String volumeId, String nodeId, String allocId) {}

  /** The parts of a claim key, or empty if {@code key} is not a well-formed one. */
  public Optional<ClaimPath> parseClaimKey(String key) {
    if (!key.startsWith(claimsRoot())) {
      return Optional.empty();
    }
    String[] parts = key.substring(claimsRoot().length()).split("/", -1);
    if (parts.length != 4 || !isNodeIdShape(parts[0]) || !PluginIds.isValid(parts[1])) {
      return Optional.empty();
    }
    try {
      return Optional.of(new ClaimPath(parts[1], unescape(parts[2]), parts[0], unescape(parts[3])));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** A parsed attachment key. */
  public record AttachmentPath(String pluginId, String volumeId, String nodeId) {}

  /** The parts of an attachment key, or empty if {@code key} is not a well-formed one. */
  public Optional<AttachmentPath> parseAttachmentKey(String key) {
    if (!key.startsWith(attachmentsRoot())) {
      return Optional.empty();
    }
    String[] parts = key.substring(attachmentsRoot().length()).split("/", -1);
    if (parts.length != 3 || !PluginIds.isValid(parts[0]) || !isNodeIdShape(parts[2])) {
      return Optional.empty();
    }
    try {
      return Optional.of(new AttachmentPath(parts[0], unescape(parts[1]), parts[2]));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
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

  // ---- the controller agent's readings (ControllerReadings) ----

  public String conditionsRoot() {
    return prefix + "/conditions/";
  }

  /** Every condition of a plugin id's volumes: {@code <prefix>/conditions/<plugin>/}. */
  public String conditionsPrefix(String pluginId) {
    return conditionsRoot() + dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId) + "/";
  }

  /** {@code <prefix>/conditions/<plugin>/<vol>}: absent while the volume is normal ({@link VolumeCondition}). */
  public String conditionKey(String pluginId, String volumeId) {
    return conditionsPrefix(pluginId) + escape(volumeId);
  }

  public String leaksRoot() {
    return prefix + "/leaks/";
  }

  /** {@code <prefix>/leaks/<plugin>}: what the plugin has that no record names ({@link ControllerLeaks}). */
  public String leaksKey(String pluginId) {
    return leaksRoot() + dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
  }

  public String capacityRoot() {
    return prefix + "/capacity/";
  }

  /** Every capacity reading of a plugin id: {@code <prefix>/capacity/<plugin>/}. */
  public String capacityPrefix(String pluginId) {
    return capacityRoot() + dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId) + "/";
  }

  /** {@code <prefix>/capacity/<plugin>/<segment>} ({@link CapacityReading#segmentKey}). */
  public String capacityKey(String pluginId, String segmentKey) {
    return capacityPrefix(pluginId) + segmentKey;
  }

  /** The snapshot records of a plugin id, if any: {@code <prefix>/snapshots/<plugin>/} (ids escaped). */
  public String snapshotRecordsPrefix(String pluginId) {
    return prefix + "/snapshots/" + dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId) + "/";
  }

  @Override
  public String toString() {
    return prefix;
  }
}
