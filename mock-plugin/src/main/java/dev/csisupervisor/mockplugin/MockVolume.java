package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/** One volume of the {@link InMemoryDriver}, and where it is published and staged; guarded by the driver's lock. */
final class MockVolume {
  final String id;
  final String name;
  long capacity;
  final VolumeContentSource source; // null if none
  /** node id -> readonly flag of its ControllerPublishVolume */
  final Map<String, Boolean> publishedTo = new LinkedHashMap<>();
  /** staging paths on this node */
  final Set<String> stagedAt = new LinkedHashSet<>();
  /** target path -> readonly */
  final Map<String, Boolean> publishedAt = new LinkedHashMap<>();
  /** What its create asked ({@link DriverChecks#madeFor}); empty: not known (all is confirmed). */
  final Set<String> madeFor = new LinkedHashSet<>();
  /** Its mutable parameters now. */
  final Map<String, String> mutable = new java.util.TreeMap<>();
  /** The {@link Pools pool} it was made in; "" if none. */
  String pool = "";

  MockVolume(String id, String name, long capacity, VolumeContentSource source) {
    this.id = id;
    this.name = name;
    this.capacity = capacity;
    this.source = source;
  }

  Volume toProto() {
    Volume.Builder v = Volume.newBuilder()
        .setVolumeId(id)
        .setCapacityBytes(capacity)
        .putVolumeContext("name", name);
    if (source != null) {
      v.setContentSource(source);
    }
    return v.build();
  }
}
