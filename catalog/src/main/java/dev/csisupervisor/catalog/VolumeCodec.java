package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
      List<Map<String, String>> accessibleTopology, Map<String, String> parameters, Map<String, String> context,
      String sourceType, String sourceId, Map<String, String> mutableParameters, Boolean notValidated) {}

  /** A recorded snapshot. */
  record SnapshotJson(int format, String plugin, String snapshot, String name, String sourceVolume, long sizeBytes,
      String creationTime, boolean readyToUse) {}

  /** {@code block} and {@code fsType} absent (claims written before they were kept): a mount, the default type. */
  record ClaimJson(int format, String plugin, String volume, String node, String alloc, String mode, boolean readOnly,
      String csiNodeId, String since, boolean block, String fsType) {}

  record AttachmentJson(int format, String plugin, String volume, String node, String csiNodeId, String state,
      Map<String, String> publishContext, String message, String controller, String since, int attempts,
      String retryAt) {}

  record RequestJson(int format, String kind, String plugin, String name, long requiredBytes, long limitBytes,
      Set<String> accessModes, boolean block, String fsType, Map<String, String> parameters,
      List<Map<String, String>> requisite, List<Map<String, String>> preferred, String secretsFile, String state,
      String volume, String message, int attempts, String controller, String attemptStarted, String nextAttempt,
      String requested, String sourceType, String sourceId, Map<String, String> mutableParameters,
      Map<String, String> context) {}

  /** The remembered controller capabilities of a plugin id: which, seen by which agent, when. */
  record CapabilitiesJson(int format, Set<String> controllerCapabilities, String node, String since) {}

  static ByteString encodeCapabilities(Set<String> capabilities, String nodeId, Instant since) {
    return CatalogCodec.write(new CapabilitiesJson(CatalogCodec.FORMAT, new TreeSet<>(capabilities), nodeId,
        since.toString()));
  }

  static Set<String> decodeCapabilities(ByteString value) {
    CapabilitiesJson j = CatalogCodec.read(value, CapabilitiesJson.class);
    if (j.controllerCapabilities() == null) {
      throw new IllegalArgumentException("bad capabilities entry: controllerCapabilities is missing");
    }
    return Set.copyOf(j.controllerCapabilities());
  }

  /** The election value: which agent, since when. */
  record ControllerJson(int format, String node, String since) {}

  record DetachOrderJson(int format, String node, String plugin, String volume, String asked) {}

  static ByteString encode(DetachOrder o) {
    return CatalogCodec.write(new DetachOrderJson(CatalogCodec.FORMAT, o.nodeId(), o.pluginId().orElse(null),
        o.volumeId().orElse(null), o.asked().toString()));
  }

  static DetachOrder decodeDetachOrder(ByteString value) {
    DetachOrderJson j = CatalogCodec.read(value, DetachOrderJson.class);
    try {
      return new DetachOrder(j.node(), Optional.ofNullable(j.plugin()), Optional.ofNullable(j.volume()),
          Instant.parse(CatalogCodec.req(j.asked(), "asked")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad detach order: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ClusterVolume v) {
    return CatalogCodec.write(new VolumeJson(CatalogCodec.FORMAT, v.pluginId(), v.volumeId(), v.capacityBytes(),
        v.accessModes().stream().map(Enum::name).collect(Collectors.toCollection(TreeSet::new)), v.accessibleTopology(),
        v.parameters(), v.volumeContext(), v.source().map(f -> f.type().name()).orElse(null),
        v.source().map(VolumeSource::id).orElse(null), v.mutableParameters().isEmpty() ? null : v.mutableParameters(),
        v.validated() ? null : Boolean.TRUE));
  }

  static ByteString encode(ClusterVolumeSnapshot s) {
    return CatalogCodec.write(new SnapshotJson(CatalogCodec.FORMAT, s.pluginId(), s.snapshotId(), s.name(),
        s.sourceVolumeId(), s.sizeBytes(), s.creationTime().map(Object::toString).orElse(""), s.readyToUse()));
  }

  static ClusterVolumeSnapshot decodeSnapshot(ByteString value) {
    SnapshotJson j = CatalogCodec.read(value, SnapshotJson.class);
    try {
      return new ClusterVolumeSnapshot(j.plugin(), j.snapshot(), j.name(), j.sourceVolume(), j.sizeBytes(),
          optional(j.creationTime()).map(Instant::parse), j.readyToUse());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad snapshot entry: " + e.getMessage(), e);
    }
  }

  /** A source as written ({@code null}s: none). */
  private static Optional<VolumeSource> source(String type, String id) {
    if (type == null || type.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new VolumeSource(VolumeSource.Type.valueOf(type), CatalogCodec.req(id, "sourceId")));
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
          orEmpty(j.context()), source(j.sourceType(), j.sourceId()), orEmpty(j.mutableParameters()),
          !Boolean.TRUE.equals(j.notValidated()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad volume entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ClusterClaim c) {
    return CatalogCodec.write(new ClaimJson(CatalogCodec.FORMAT, c.pluginId(), c.volumeId(), c.nodeId(), c.allocId(),
        c.mode().name(), c.readOnly(), c.csiNodeId(), c.since().toString(), c.access().block(), c.access().fsType()));
  }

  static ClusterClaim decodeClaim(ByteString value) {
    return decodeClaim(value, 0);
  }

  /** @param revision the key's mod revision */
  static ClusterClaim decodeClaim(ByteString value, long revision) {
    ClaimJson j = CatalogCodec.read(value, ClaimJson.class);
    try {
      return new ClusterClaim(j.plugin(), j.volume(), j.node(), j.alloc(), VolumeAccessMode.parse("mode", j.mode()),
          j.readOnly(), j.csiNodeId() == null ? "" : j.csiNodeId(), Instant.parse(CatalogCodec.req(j.since(), "since")),
          new ClaimAccess(j.block(), j.fsType() == null ? "" : j.fsType()), revision);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad claim entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ClusterAttachment a) {
    return CatalogCodec.write(new AttachmentJson(CatalogCodec.FORMAT, a.pluginId(), a.volumeId(), a.nodeId(),
        a.csiNodeId(), a.state().name(), a.publishContext(), a.message(), a.controllerNodeId(), a.since().toString(),
        a.attempts(), a.retryAt().map(Object::toString).orElse("")));
  }

  static ClusterAttachment decodeAttachment(ByteString value) {
    return decodeAttachment(value, 0);
  }

  /** @param revision the key's mod revision */
  static ClusterAttachment decodeAttachment(ByteString value, long revision) {
    AttachmentJson j = CatalogCodec.read(value, AttachmentJson.class);
    try {
      return new ClusterAttachment(j.plugin(), j.volume(), j.node(), j.csiNodeId() == null ? "" : j.csiNodeId(),
          ClusterAttachment.State.valueOf(CatalogCodec.req(j.state(), "state")), orEmpty(j.publishContext()),
          j.message() == null ? "" : j.message(), j.controller(), Instant.parse(CatalogCodec.req(j.since(), "since")),
          j.attempts(), optional(j.retryAt()).map(Instant::parse), revision);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad attachment entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ClusterVolumeRequest r) {
    ClusterVolumeRequest.Spec s = r.spec();
    return CatalogCodec.write(new RequestJson(CatalogCodec.FORMAT, r.kind().name(), r.pluginId(), r.name(),
        s.requiredBytes(), s.limitBytes(),
        s.accessModes().stream().map(Enum::name).collect(Collectors.toCollection(TreeSet::new)), s.block(), s.fsType(),
        s.parameters(), s.requisite(), s.preferred(), r.secretsFile().map(Object::toString).orElse(""),
        r.state().name(), r.volumeId(), r.message(), r.attempts(), r.controllerNodeId(),
        r.attemptStarted().map(Object::toString).orElse(""), r.nextAttempt().map(Object::toString).orElse(""),
        r.requested().toString(), s.source().map(f -> f.type().name()).orElse(null),
        s.source().map(VolumeSource::id).orElse(null), s.mutableParameters().isEmpty() ? null : s.mutableParameters(),
        s.volumeContext().isEmpty() ? null : s.volumeContext()));
  }

  static ClusterVolumeRequest decodeRequest(ByteString value, long revision) {
    RequestJson j = CatalogCodec.read(value, RequestJson.class);
    try {
      Set<VolumeAccessMode> modes = EnumSet.noneOf(VolumeAccessMode.class);
      for (String m : orEmpty(j.accessModes())) {
        modes.add(VolumeAccessMode.parse("accessModes", m));
      }
      ClusterVolumeRequest.Spec spec = new ClusterVolumeRequest.Spec(j.requiredBytes(), j.limitBytes(), modes,
          j.block(), j.fsType() == null ? "" : j.fsType(), orEmpty(j.parameters()),
          j.requisite() == null ? List.of() : j.requisite(), j.preferred() == null ? List.of() : j.preferred(),
          source(j.sourceType(), j.sourceId()), orEmpty(j.mutableParameters()), orEmpty(j.context()));
      return new ClusterVolumeRequest(ClusterVolumeRequest.Kind.valueOf(CatalogCodec.req(j.kind(), "kind")),
          j.plugin(), j.name(), spec, optional(j.secretsFile()).map(java.nio.file.Path::of),
          ClusterVolumeRequest.State.valueOf(CatalogCodec.req(j.state(), "state")),
          j.volume() == null ? "" : j.volume(), j.message() == null ? "" : j.message(), j.attempts(),
          j.controller() == null ? "" : j.controller(), optional(j.attemptStarted()).map(Instant::parse),
          optional(j.nextAttempt()).map(Instant::parse), Instant.parse(CatalogCodec.req(j.requested(), "requested")),
          revision);
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad request entry: " + e.getMessage(), e);
    }
  }

  private static java.util.Optional<String> optional(String s) {
    return s == null || s.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(s);
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
