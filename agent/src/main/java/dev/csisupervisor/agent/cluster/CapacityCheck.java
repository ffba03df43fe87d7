package dev.csisupervisor.agent.cluster;

import static dev.csisupervisor.agent.cluster.PluginTerm.keysWritten;

import dev.csisupervisor.agent.cluster.LeaderCalls.CallFailed;
import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CapacityRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiCapacity;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.registry.PluginInfo;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One capacity reading of a plugin id with {@code GET_CAPACITY} (a part of {@link ControllerChecks}): GetCapacity per
 * topology segment of the plugin id's node plugins (with {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}; else one call
 * without topology), for no parameters and for each distinct parameter set of its registered volumes; written to
 * etcd only where it changed. Run on the checks' thread.
 */
record CapacityCheck(ClusterVolumes volumes, LeaderCalls calls, Clock clock) {
  private static final Logger log = LoggerFactory.getLogger(CapacityCheck.class);

  /** @return keys written */
  int check(PluginTerm term, PluginInfo controller, CsiClient client, VolumesSnapshot s)
      throws NotLeading, CallFailed {
    ClusterVolumes.Leadership l = term.leadership;
    String plugin = controller.name();
    Instant now = clock.instant();
    Map<String, CapacityReading> readings = new TreeMap<>();
    Set<Map<String, String>> parameterSets = parameterSets(plugin, s);
    for (Map<String, String> segment : segments(controller)) {
      List<CapacityReading.Entry> entries = new ArrayList<>();
      for (Map<String, String> parameters : parameterSets) {
        CapacityRequest request = new CapacityRequest(List.of(), parameters,
            segment.isEmpty() ? Optional.empty() : Optional.of(segment));
        CsiCapacity c = calls.call(l, "GetCapacity of plugin " + plugin + " in " + segment + " for " + parameters,
            () -> client.getCapacityAsync(request));
        entries.add(new CapacityReading.Entry(parameters, c.availableCapacity(), c.maximumVolumeSize()));
      }
      CapacityReading r = new CapacityReading(plugin, segment, entries, now);
      CapacityReading before = term.capacity.get(r.segmentKey());
      readings.put(r.segmentKey(), r.sameAs(before) ? before : r);
    }
    boolean same = readings.keySet().equals(term.capacity.keySet())
        && readings.entrySet().stream().allMatch(e -> e.getValue().sameAs(term.capacity.get(e.getKey())));
    if (same) {
      return 0;
    }
    int written = keysWritten(volumes.writeCapacity(l, plugin, readings.values()));
    term.capacity = readings;
    log.debug("cluster controller: capacity of plugin {}: {}", plugin, readings.values());
    return written;
  }

  /** Each distinct topology of the plugin id's node plugins, if the plugin takes topology; else one empty segment. */
  private Set<Map<String, String>> segments(PluginInfo controller) {
    Set<Map<String, String>> segments = new LinkedHashSet<>();
    if (controller.fingerprint().pluginCapabilities().contains(CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS)) {
      for (CatalogEntry e : volumes.nodePluginsOf(controller.name())) {
        if (!e.accessibleTopology().isEmpty()) {
          segments.add(new TreeMap<>(e.accessibleTopology()));
        }
      }
    }
    if (segments.isEmpty()) {
      segments.add(Map.of());
    }
    return segments;
  }

  /** None, then each distinct parameter set of the plugin id's registered volumes. */
  private static Set<Map<String, String>> parameterSets(String plugin, VolumesSnapshot s) {
    Set<Map<String, String>> parameterSets = new LinkedHashSet<>();
    parameterSets.add(Map.of());
    s.volumes().stream().filter(v -> v.pluginId().equals(plugin)).map(v -> (Map<String, String>) new TreeMap<>(
        v.parameters())).forEach(parameterSets::add);
    return parameterSets;
  }
}
