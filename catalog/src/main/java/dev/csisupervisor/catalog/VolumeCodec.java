package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Values of the cluster volume keys as JSON with a format number, like {@link CatalogCodec}: volumes, claims,
 * attachments and the controller election. A value that does not read is refused naming the field.
 */
final class VolumeCodec {
  private VolumeCodec() {}

  record VolumeJson(int format, String plugin, String volume, long capacityBytes, Set<String> accessModes,
      List<Map<String, String>> accessibleTopology, Map<String, String> parameters, Map<String, String> context) {}

  record ClaimJson(int format, String plugin, String volume, String node, String alloc, String mode, boolean readOnly,
      String csiNodeId, String since) {}

  record AttachmentJson(int format, String plugin, String volume, String node, String csiNodeId, String state,
      Map<String, String> publishContext, String message, String controller, String since) {}

  /** The election value: which agent, since when. */
  record ControllerJson(int format, String node, String since) {}

  static ByteString encode(ClusterVolume v) {
    return CatalogCodec.write(new VolumeJson(CatalogCodec.FORMAT, v.pluginId(), v.volumeId(), v.capacityBytes(),
        v.accessModes().stream().map(Enum::name).collect(Collectors.toCollection(TreeSet::new)), v.accessibleTopology(),
        v.parameters(), v.volumeContext()));
  }

  static ClusterVolume decodeVolume(ByteString value) {
    VolumeJson j = CatalogCodec.read(value, VolumeJson.class);
    try {
      Set<VolumeAccessMode> modes = EnumSet.noneOf(VolumeAccessMode.class);
      for (String m : orEmpty(j.accessModes())) {
        modes.add(VolumeAccessMode.parse("accessModes", m));
      }
      return new ClusterVolume(j.plugin(), j.volume(), j.capacityBytes(), modes,
          j.accessibleTopology() == null ? List.of() : j.accessibleTopology(), orEmpty(j.parameters()),
          orEmpty(j.context()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad volume entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ClusterClaim c) {
    return CatalogCodec.write(new ClaimJson(CatalogCodec.FORMAT, c.pluginId(), c.volumeId(), c.nodeId(), c.allocId(),
        c.mode().name(), c.readOnly(), c.csiNodeId(), c.since().toString()));
  }

  static ClusterClaim decodeClaim(ByteString value) {
    ClaimJson j = CatalogCodec.read(value, ClaimJson.class);
    try {
      return new ClusterClaim(j.plugin(), j.volume(), j.node(), j.alloc(), VolumeAccessMode.parse("mode", j.mode()),
          j.readOnly(), j.csiNodeId() == null ? "" : j.csiNodeId(), Instant.parse(CatalogCodec.req(j.since(), "since")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad claim entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ClusterAttachment a) {
    return CatalogCodec.write(new AttachmentJson(CatalogCodec.FORMAT, a.pluginId(), a.volumeId(), a.nodeId(),
        a.csiNodeId(), a.state().name(), a.publishContext(), a.message(), a.controllerNodeId(), a.since().toString()));
  }

  static ClusterAttachment decodeAttachment(ByteString value) {
    AttachmentJson j = CatalogCodec.read(value, AttachmentJson.class);
    try {
      return new ClusterAttachment(j.plugin(), j.volume(), j.node(), j.csiNodeId() == null ? "" : j.csiNodeId(),
          ClusterAttachment.State.valueOf(CatalogCodec.req(j.state(), "state")), orEmpty(j.publishContext()),
          j.message() == null ? "" : j.message(), j.controller(), Instant.parse(CatalogCodec.req(j.since(), "since")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad attachment entry: " + e.getMessage(), e);
    }
  }

  static ByteString encodeController(String nodeId, Instant since) {
    return CatalogCodec.write(new ControllerJson(CatalogCodec.FORMAT, nodeId, since.toString()));
  }

  static ControllerJson decodeController(ByteString value) {
    return CatalogCodec.read(value, ControllerJson.class);
  }

  private static <K, V> Map<K, V> orEmpty(Map<K, V> m) {
    return m == null ? Map.of() : m;
  }

  private static Set<String> orEmpty(Set<String> s) {
    return s == null ? Set.of() : s;
  }
}
