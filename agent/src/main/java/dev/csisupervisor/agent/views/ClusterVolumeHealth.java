package dev.csisupervisor.agent.views;

import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.ControllerLeaks;
import dev.csisupervisor.catalog.VolumeCondition;
import dev.csisupervisor.catalog.VolumesSnapshot;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What the controller agents' checks found, for {@code cluster volume status} and the operator page: each volume's
 * condition (ABNORMAL in the plugin's words, MISSING) and per plugin id what it has that no record names (leaks,
 * never deleted). Immutable once read.
 */
public final class ClusterVolumeHealth {
  private final Map<String, Map<String, VolumeCondition>> conditions;
  private final Map<String, ControllerLeaks> leaks;

  private ClusterVolumeHealth(Map<String, Map<String, VolumeCondition>> conditions, Map<String, ControllerLeaks> leaks) {
    this.conditions = conditions;
    this.leaks = leaks;
  }

  /** The readings of {@code plugin}, or of every plugin id with a volume or a controller agent in {@code s}. */
  public static ClusterVolumeHealth read(ClusterVolumes v, VolumesSnapshot s, String plugin) {
    Set<String> plugins = new TreeSet<>();
    if (plugin != null) {
      plugins.add(plugin);
    } else {
      s.volumes().forEach(vol -> plugins.add(vol.pluginId()));
      plugins.addAll(s.controllers().keySet());
    }
    Map<String, Map<String, VolumeCondition>> conditions = new TreeMap<>();
    Map<String, ControllerLeaks> leaks = new TreeMap<>();
    for (String p : plugins) {
      conditions.put(p, v.conditions(p));
      v.leaks(p).ifPresent(l -> leaks.put(p, l));
    }
    return new ClusterVolumeHealth(conditions, leaks);
  }

  public Optional<VolumeCondition> condition(String plugin, String volumeId) {
    return Optional.ofNullable(conditions.getOrDefault(plugin, Map.of()).get(volumeId));
  }

  /** {@code conditions} (of {@code volumeId} only, if given) and {@code leaks} (unless a volume is given). */
  public void addTo(Map<String, Object> status, String volumeId) {
    List<Object> cs = new ArrayList<>();
    conditions.values().forEach(m -> m.values().stream().filter(c -> volumeId == null || c.volumeId().equals(volumeId))
        .forEach(c -> {
          Map<String, Object> j = new LinkedHashMap<>();
          j.put("plugin", c.pluginId());
          j.put("volume", c.volumeId());
          j.put("condition", c.kind().name());
          j.put("message", c.message());
          j.put("since", c.since().toString());
          cs.add(j);
        }));
    status.put("conditions", cs);
    List<Object> ls = new ArrayList<>();
    if (volumeId == null) {
      leaks.values().forEach(l -> {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("plugin", l.pluginId());
        j.put("volumes", l.volumes());
        j.put("snapshots", l.snapshots());
        j.put("missing_snapshots", l.missingSnapshots());
        j.put("unrecorded_publications", l.unrecordedPublications());
        j.put("since", l.since().toString());
        ls.add(j);
      });
    }
    status.put("leaks", ls);
  }

  public void printLeaks(PrintWriter out) {
    for (ControllerLeaks l : leaks.values()) {
      String since = " (since " + l.since() + "; left as they are)";
      if (!l.volumes().isEmpty()) {
        out.println("LEAKED: plugin " + l.pluginId() + " has volumes no record names: " + l.volumes() + since);
      }
      if (!l.snapshots().isEmpty()) {
        out.println("LEAKED: plugin " + l.pluginId() + " has snapshots no record names: " + l.snapshots() + since);
      }
      if (!l.missingSnapshots().isEmpty()) {
        out.println("MISSING: plugin " + l.pluginId() + " lacks recorded snapshots " + l.missingSnapshots() + since);
      }
      if (!l.unrecordedPublications().isEmpty()) {
        out.println("UNRECORDED: plugin " + l.pluginId() + " says volumes are published where no attachment records "
            + "it (volume@node): " + l.unrecordedPublications() + since);
      }
    }
  }
}
