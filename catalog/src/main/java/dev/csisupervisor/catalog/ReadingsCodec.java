package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Values of the controller agent's readings as JSON with a format number, like {@link VolumeCodec}: conditions,
 * leaks and capacity. A value that does not read is refused naming the field.
 */
final class ReadingsCodec {
  private ReadingsCodec() {}

  record ConditionJson(int format, String plugin, String volume, String kind, String message, String since) {}

  record LeaksJson(int format, String plugin, List<String> volumes, List<String> snapshots,
      List<String> missingSnapshots, List<String> unrecordedPublications, String since) {}

  record CapacityEntryJson(Map<String, String> parameters, long availableBytes, Long maximumVolumeSize) {}

  record CapacityJson(int format, String plugin, Map<String, String> topology, List<CapacityEntryJson> entries,
      String since) {}

  static ByteString encode(VolumeCondition c) {
    return CatalogCodec.write(new ConditionJson(CatalogCodec.FORMAT, c.pluginId(), c.volumeId(), c.kind().name(),
        c.message(), c.since().toString()));
  }

  static VolumeCondition decodeCondition(ByteString value) {
    ConditionJson j = CatalogCodec.read(value, ConditionJson.class);
    try {
      checkFormat(j.format());
      return new VolumeCondition(j.plugin(), j.volume(),
          VolumeCondition.Kind.valueOf(CatalogCodec.req(j.kind(), "kind")), j.message() == null ? "" : j.message(),
          Instant.parse(CatalogCodec.req(j.since(), "since")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad condition entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(ControllerLeaks l) {
    return CatalogCodec.write(new LeaksJson(CatalogCodec.FORMAT, l.pluginId(), l.volumes(), l.snapshots(),
        l.missingSnapshots(), l.unrecordedPublications(), l.since().toString()));
  }

  static ControllerLeaks decodeLeaks(ByteString value) {
    LeaksJson j = CatalogCodec.read(value, LeaksJson.class);
    try {
      checkFormat(j.format());
      return new ControllerLeaks(j.plugin(), orEmpty(j.volumes()), orEmpty(j.snapshots()),
          orEmpty(j.missingSnapshots()), orEmpty(j.unrecordedPublications()),
          Instant.parse(CatalogCodec.req(j.since(), "since")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad leaks entry: " + e.getMessage(), e);
    }
  }

  static ByteString encode(CapacityReading r) {
    List<CapacityEntryJson> entries = new ArrayList<>();
    for (CapacityReading.Entry e : r.entries()) {
      entries.add(new CapacityEntryJson(e.parameters(), e.availableBytes(),
          e.maximumVolumeSize().isPresent() ? e.maximumVolumeSize().getAsLong() : null));
    }
    return CatalogCodec.write(new CapacityJson(CatalogCodec.FORMAT, r.pluginId(), r.topology(), entries,
        r.since().toString()));
  }

  static CapacityReading decodeCapacity(ByteString value) {
    CapacityJson j = CatalogCodec.read(value, CapacityJson.class);
    try {
      checkFormat(j.format());
      List<CapacityReading.Entry> entries = new ArrayList<>();
      for (CapacityEntryJson e : j.entries() == null ? List.<CapacityEntryJson>of() : j.entries()) {
        entries.add(new CapacityReading.Entry(e.parameters() == null ? Map.of() : e.parameters(), e.availableBytes(),
            e.maximumVolumeSize() == null ? OptionalLong.empty() : OptionalLong.of(e.maximumVolumeSize())));
      }
      return new CapacityReading(j.plugin(), j.topology() == null ? Map.of() : j.topology(), entries,
          Instant.parse(CatalogCodec.req(j.since(), "since")));
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("bad capacity entry: " + e.getMessage(), e);
    }
  }

  private static void checkFormat(int format) {
    if (format != CatalogCodec.FORMAT) {
      throw new IllegalArgumentException("format " + format + " is not " + CatalogCodec.FORMAT
          + " (written by another version)");
    }
  }

  private static List<String> orEmpty(List<String> l) {
    return l == null ? List.of() : l;
  }
}
