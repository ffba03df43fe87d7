package dev.csisupervisor.agent.cluster;

import static dev.csisupervisor.agent.cluster.PluginTerm.keysWritten;

import dev.csisupervisor.agent.cluster.LeaderCalls.CallFailed;
import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.ControllerLeaks;
import dev.csisupervisor.catalog.VolumeCondition;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.VolumeEntry;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.registry.PluginInfo;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One health check of a plugin id's volumes (a part of {@link ControllerChecks}), against the records read before
 * the plugin is asked: with {@code LIST_VOLUMES}, ListVolumes ({@link PagedListings}); else with {@code GET_VOLUME},
 * ControllerGetVolume per registered volume; neither: nothing. An abnormal {@code volume_condition} is ABNORMAL in the
 * plugin's words; a registered volume the plugin lacks is MISSING; a volume the plugin has that no record names is a
 * leak (never deleted). With {@code LIST_VOLUMES_PUBLISHED_NODES}, an ATTACHED attachment whose node the plugin does
 * not list is published again ({@link VolumeAttacher#publishAgain}); a listed node with no attachment is only
 * reported. With {@code LIST_SNAPSHOTS}, ListSnapshots against the snapshot records. A leak, an unrecorded
 * publication or a missing snapshot is reported only once two rounds in a row saw it. Written to etcd only where it
 * changed. Run on the checks' thread.
 */
final class ControllerHealthCheck {
  private static final Logger log = LoggerFactory.getLogger(ControllerHealthCheck.class);

  private final ClusterVolumes volumes;
  private final LeaderCalls calls;
  private final PagedListings listings;
  private final VolumeAttacher attacher;
  private final Clock clock;
  private final AtomicLong republished = new AtomicLong();
  private volatile int unrecordedPublications;

  ControllerHealthCheck(ClusterVolumes volumes, LeaderCalls calls, VolumeAttacher attacher, Clock clock) {
    this.volumes = volumes;
    this.calls = calls;
    this.listings = new PagedListings(calls);
    this.attacher = attacher;
    this.clock = clock;
  }

  /** Publications sent again so far. */
  long republished() {
    return republished.get();
  }

  /** Publications no attachment records, as the last check reported them (two rounds in a row). */
  int unrecordedPublications() {
    return unrecordedPublications;
  }

  /** @return keys written */
  int check(PluginTerm term, PluginInfo controller, CsiClient client, Set<String> caps, VolumesSnapshot s)
      throws NotLeading, CallFailed {
    ClusterVolumes.Leadership l = term.leadership;
    String plugin = controller.name();
    Map<String, ClusterVolume> registered = new TreeMap<>();
    s.volumes().stream().filter(v -> v.pluginId().equals(plugin)).forEach(v -> registered.put(v.volumeId(), v));
    Map<String, VolumeEntry> seen = new TreeMap<>();
    Map<String, String> missing = new TreeMap<>();
    boolean listed = caps.contains("LIST_VOLUMES");
    // Step 2: what the plugin has.
    if (listed) {
      for (VolumeEntry e : listings.volumes(l, client, plugin)) {
        seen.put(e.volume().volumeId(), e);
      }
      registered.keySet().stream().filter(v -> !seen.containsKey(v))
          .forEach(v -> missing.put(v, "ListVolumes does not list it"));
    } else if (caps.contains("GET_VOLUME")) {
      for (String vol : registered.keySet()) {
        try {
          seen.put(vol, calls.call(l, "ControllerGetVolume of " + vol + " (check of plugin " + plugin + ")",
              () -> client.controllerGetVolumeAsync(vol)));
        } catch (CallFailed e) {
          if (!CsiOutcome.notFound(e.getCause())) {
            throw e;
          }
          missing.put(vol, "ControllerGetVolume: NOT_FOUND: " + e.getMessage());
        }
      }
    } else {
      return 0; // nothing to ask
    }
    Instant now = clock.instant();
    int written = conditions(term, plugin, registered.keySet(), seen, missing, s, now);
    Set<String> unrecorded = caps.contains("LIST_VOLUMES_PUBLISHED_NODES")
        ? publications(l, controller, client, seen, s) : Set.of();
    // Step 5: snapshots.
    Set<String> unnamedSnapshots = Set.of();
    Set<String> unlistedSnapshots = Set.of();
    if (caps.contains("LIST_SNAPSHOTS")) {
      Set<String> records = volumes.snapshotRecordIds(plugin);
      Set<String> listedSnapshots = new TreeSet<>();
      listings.snapshots(l, client, plugin).forEach(x -> listedSnapshots.add(x.snapshotId()));
      unnamedSnapshots = minus(listedSnapshots, records);
      unlistedSnapshots = minus(records, listedSnapshots);
    }
    Set<String> unnamedVolumes = listed ? minus(seen.keySet(), registered.keySet()) : Set.of();
    return written + leaks(term, plugin, unnamedVolumes, unnamedSnapshots, unlistedSnapshots, unrecorded, now);
  }

  /** Step 3: conditions, each kept with the since it was first seen. @return keys written */
  private int conditions(PluginTerm term, String plugin, Set<String> registered, Map<String, VolumeEntry> seen,
      Map<String, String> missing, VolumesSnapshot s, Instant now) throws NotLeading {
    List<VolumeCondition> conditions = new ArrayList<>();
    for (String vol : registered) {
      if (s.deleteOf(plugin, vol).isPresent()) {
        continue; // being deleted: the plugin may lack it already
      }
      VolumeCondition c = null;
      if (missing.containsKey(vol) && confirmedMissing(term, plugin, vol)) {
        c = new VolumeCondition(plugin, vol, VolumeCondition.Kind.MISSING, missing.get(vol), now);
      } else if (seen.containsKey(vol)) {
        Optional<VolumeStats.Condition> cond = seen.get(vol).condition();
        if (cond.isPresent() && cond.get().abnormal()) {
          c = new VolumeCondition(plugin, vol, VolumeCondition.Kind.ABNORMAL, cond.get().message(), now);
        }
      }
      if (c != null) {
        VolumeCondition before = term.conditions.get(vol);
        conditions.add(c.sameAs(before) ? before : c);
      }
    }
    Map<String, VolumeCondition> wanted = new TreeMap<>();
    conditions.forEach(c -> wanted.put(c.volumeId(), c));
    if (sameConditions(wanted, term.conditions)) {
      return 0;
    }
    int written = keysWritten(volumes.writeConditions(term.leadership, plugin, conditions));
    conditions.stream().filter(c -> !c.sameAs(term.conditions.get(c.volumeId())))
        .forEach(c -> log.warn("cluster controller: volume {}/{} is {}", plugin, c.volumeId(), c.describe()));
    term.conditions.keySet().stream().filter(v -> !wanted.containsKey(v))
        .forEach(v -> log.info("cluster controller: volume {}/{} is normal again", plugin, v));
    term.conditions = wanted;
    return written;
  }

  /**
   * Step 4: publications the plugin lost (sent again) and ones no attachment records (returned, as
   * {@code volume@csiNode}).
   */
  private Set<String> publications(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client,
      Map<String, VolumeEntry> seen, VolumesSnapshot s) throws NotLeading, CallFailed {
    String plugin = controller.name();
    for (ClusterAttachment a : s.attachments()) {
      VolumeEntry e = seen.get(a.volumeId());
      if (a.pluginId().equals(plugin) && a.state() == ClusterAttachment.State.ATTACHED && e != null
          && !e.publishedNodeIds().contains(a.csiNodeId())) {
        log.warn("cluster controller: plugin {} does not list volume {} as published to {} (node {}): publishing "
            + "it again", plugin, a.volumeId(), a.csiNodeId(), a.nodeId());
        if (attacher.publishAgain(l, controller, client, a, s)) {
          republished.incrementAndGet();
        }
      }
    }
    Set<String> unrecorded = new TreeSet<>();
    for (VolumeEntry e : seen.values()) {
      String vol = e.volume().volumeId();
      for (String csiNode : e.publishedNodeIds()) {
        if (s.attachmentsOf(plugin, vol).stream().noneMatch(a -> a.csiNodeId().equals(csiNode))) {
          unrecorded.add(vol + "@" + csiNode);
        }
      }
    }
    return unrecorded;
  }

  /** Step 6: leaks, each seen two rounds in a row. @return keys written */
  private int leaks(PluginTerm term, String plugin, Set<String> unnamedVolumes, Set<String> unnamedSnapshots,
      Set<String> unlistedSnapshots, Set<String> unrecorded, Instant now) throws NotLeading {
    ControllerLeaks leaks = new ControllerLeaks(plugin, List.copyOf(both(unnamedVolumes, term.unnamedVolumes)),
        List.copyOf(both(unnamedSnapshots, term.unnamedSnapshots)),
        List.copyOf(both(unlistedSnapshots, term.unlistedSnapshots)), List.copyOf(both(unrecorded, term.unrecorded)),
        now);
    term.unnamedVolumes = unnamedVolumes;
    term.unnamedSnapshots = unnamedSnapshots;
    term.unlistedSnapshots = unlistedSnapshots;
    term.unrecorded = unrecorded;
    unrecordedPublications = leaks.unrecordedPublications().size();
    if (term.leaks.map(leaks::sameAs).orElse(leaks.isEmpty())) {
      return 0;
    }
    if (!leaks.isEmpty()) {
      log.warn("cluster controller: plugin {} has what no record names (left as it is): volumes {}, snapshots {}; "
          + "snapshot records it lacks {}; publications no attachment records {}", plugin, leaks.volumes(),
          leaks.snapshots(), leaks.missingSnapshots(), leaks.unrecordedPublications());
    }
    int written = keysWritten(volumes.writeLeaks(term.leadership, leaks));
    term.leaks = leaks.isEmpty() ? Optional.empty() : Optional.of(leaks);
    return written;
  }

  /**
   * Whether a volume the plugin lacks is still registered, with no delete asked, in etcd itself (the records were read
   * from the watch-fed mirror before the plugin was asked: a delete done meanwhile is not a missing volume). Asked only
   * when it is not MISSING already.
   */
  private boolean confirmedMissing(PluginTerm term, String plugin, String vol) {
    VolumeCondition before = term.conditions.get(vol);
    if (before != null && before.kind() == VolumeCondition.Kind.MISSING) {
      return true;
    }
    return volumes.volume(plugin, vol).isPresent()
        && volumes.request(ClusterVolumeRequest.Kind.DELETE, plugin, vol).isEmpty();
  }

  private static boolean sameConditions(Map<String, VolumeCondition> a, Map<String, VolumeCondition> b) {
    return a.keySet().equals(b.keySet()) && a.entrySet().stream().allMatch(e -> e.getValue().sameAs(b.get(e.getKey())));
  }

  private static Set<String> minus(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.removeAll(b);
    return out;
  }

  private static Set<String> both(Set<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a);
    out.retainAll(b);
    return out;
  }
}
