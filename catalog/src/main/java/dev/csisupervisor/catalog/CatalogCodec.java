package dev.csisupervisor.catalog;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.google.protobuf.ByteString;
import dev.csisupervisor.registry.PluginType;
import java.io.IOException;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

/**
 * Catalog values as JSON (so {@code etcdctl get} is readable), with a format number. Unknown fields are
 * ignored on read so that a newer agent's entries stay readable by an older view. Thread-safe.
 */
final class CatalogCodec {
  static final int FORMAT = 1;

  private static final ObjectMapper JSON = JsonMapper.builder()
      .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
      .build();

  private CatalogCodec() {}

  record EntryJson(int format, String node, String type, String name, String alloc, String version, boolean healthy,
      String message, String since, String vendorName, String vendorVersion, Set<String> pluginCapabilities,
      Set<String> controllerCapabilities, Set<String> nodeCapabilities, String csiNodeId, long maxVolumesPerNode,
      Map<String, String> topology) {}

  record NodeJson(int format, String node, String hostname, String startedAt, long leaseTtl, String instance) {}

  static ByteString encode(CatalogEntry e) {
    return write(new EntryJson(FORMAT, e.nodeId(), e.type().id(), e.name(), e.allocId(), e.version(), e.healthy(),
        e.healthMessage(), e.healthSince().toString(), e.vendorName(), e.vendorVersion(), e.pluginCapabilities(),
        e.controllerCapabilities(), e.nodeCapabilities(), e.csiNodeId(), e.maxVolumesPerNode(), e.accessibleTopology()));
  }

  static ByteString encode(NodeEntry n) {
    return write(new NodeJson(FORMAT, n.nodeId(), n.hostname(), n.startedAt().toString(), n.leaseTtlSeconds(),
        n.instance()));
  }

  /**
   * Decodes an entry.
   *
   * @throws IllegalArgumentException naming what is wrong (not JSON, a missing or invalid field)
   */
  static CatalogEntry decodeEntry(ByteString value) {
    EntryJson j = read(value, EntryJson.class);
    try {
      return new CatalogEntry(j.node(), PluginType.parse(j.type()), j.name(), j.alloc(), j.version(), j.healthy(),
          j.message(), Instant.parse(req(j.since(), "since")), orEmpty(j.vendorName()), orEmpty(j.vendorVersion()),
          orEmpty(j.pluginCapabilities()), orEmpty(j.controllerCapabilities()), orEmpty(j.nodeCapabilities()),
          orEmpty(j.csiNodeId()), j.maxVolumesPerNode(), j.topology() == null ? Map.of() : j.topology());
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad catalog entry: " + e.getMessage(), e);
    }
  }

  static NodeEntry decodeNode(ByteString value) {
    NodeJson j = read(value, NodeJson.class);
    try {
      return new NodeEntry(j.node(), orEmpty(j.hostname()), Instant.parse(req(j.startedAt(), "startedAt")), j.leaseTtl(),
          orEmpty(j.instance()));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad node entry: " + e.getMessage(), e);
    }
  }

  static String req(String s, String field) {
    if (s == null) {
      throw new IllegalArgumentException(field + " is missing");
    }
    return s;
  }

  private static String orEmpty(String s) {
    return s == null ? "" : s;
  }

  private static Set<String> orEmpty(Set<String> s) {
    return s == null ? Set.of() : s;
  }

  static ByteString write(Object o) {
    try {
      return ByteString.copyFrom(JSON.writeValueAsBytes(o));
    } catch (IOException e) {
      throw new IllegalStateException("cannot encode " + o, e);
    }
  }

  static <T> T read(ByteString value, Class<T> type) {
    try {
      T t = JSON.readValue(value.toByteArray(), type);
      if (t == null) {
        throw new IllegalArgumentException("empty value");
      }
      return t;
    } catch (IOException e) {
      throw new IllegalArgumentException("not a catalog value (" + firstLine(e.getMessage()) + ")", e);
    }
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  /** For tests and the CLI's --json: the mapper used for values. */
  static ObjectMapper json() {
    return JSON;
  }
}
