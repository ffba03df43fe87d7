package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.ControllerLeaks;
import dev.csisupervisor.catalog.ControllerReadings;
import dev.csisupervisor.catalog.VolumeCondition;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * What the controller agent's checks know of one plugin id in one election term: its readings as in etcd (read once
 * at the term's start, then kept as written), plus what the last round saw, so that a round writes only what changed
 * and reports a leak only once two rounds in a row saw it. Confined to the checks' thread.
 */
final class PluginTerm {
  final ClusterVolumes.Leadership leadership;
  Map<String, VolumeCondition> conditions;
  Optional<ControllerLeaks> leaks;
  Map<String, CapacityReading> capacity;
  /** What the last round saw unnamed (volumes, snapshots), unlisted (snapshot records), unrecorded (publications). */
  Set<String> unnamedVolumes = Set.of();
  Set<String> unnamedSnapshots = Set.of();
  Set<String> unlistedSnapshots = Set.of();
  Set<String> unrecorded = Set.of();

  PluginTerm(ClusterVolumes.Leadership leadership, ClusterVolumes volumes, String plugin) {
    this.leadership = leadership;
    this.conditions = new TreeMap<>(volumes.conditions(plugin));
    this.leaks = volumes.leaks(plugin);
    this.capacity = new TreeMap<>();
    volumes.capacity(plugin).forEach(r -> capacity.put(r.segmentKey(), r));
  }

  /** Keys written by a readings write; a write refused for a lost election ends the check. */
  static int keysWritten(int n) throws NotLeading {
    if (n == ControllerReadings.NOT_LEADING) {
      throw new NotLeading();
    }
    return n;
  }
}
