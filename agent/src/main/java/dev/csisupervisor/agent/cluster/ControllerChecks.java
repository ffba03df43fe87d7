package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.agent.cluster.LeaderCalls.CallFailed;
import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.ControllerLeaks;
import dev.csisupervisor.catalog.ControllerReadings;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumeCondition;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CapacityRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiCapacity;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.CsiSnapshot;
import dev.csisupervisor.client.ListSnapshotsRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.SnapshotPage;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeEntry;
import dev.csisupervisor.client.VolumePage;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's periodic look at each plugin id it leads (README "Cluster volumes", health and capacity),
 * on its own single thread, so that a slow plugin never holds attaches or creates back:
 * <ol>
 *   <li><b>Health.</b> With {@code LIST_VOLUMES}, ListVolumes page by page ({@code ABORTED}: started over from the
 *       first page, at most {@value #LIST_TRIES} times); else with {@code GET_VOLUME}, ControllerGetVolume per
 *       registered volume; neither: nothing. An abnormal {@code volume_condition} is ABNORMAL in the plugin's words; a
 *       registered volume the plugin lacks is MISSING; a volume the plugin has that no record names is a leak (never
 *       deleted). With {@code LIST_VOLUMES_PUBLISHED_NODES}, an ATTACHED attachment whose node the plugin does not list
 *       is published again ({@link VolumeAttacher#publishAgain}); a listed node with no attachment is only reported.
 *       With {@code LIST_SNAPSHOTS}, ListSnapshots against the snapshot records: leaks and missing ones.</li>
 *   <li><b>Capacity.</b> With {@code GET_CAPACITY}: GetCapacity per topology segment of the plugin id's node plugins
 *       (with {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}; else one call without topology), for each parameter set of
 *       its registered volumes and none; also soon after the count of its volumes changes ({@link #volumesSeen}) or
 *       when asked ({@link #capacitySoon}).</li>
 * </ol>
 * What it finds is written to etcd only where it changed ({@link ControllerReadings}), each write conditional on the
 * election: with nothing changed a round makes no etcd write. A leak, an unrecorded publication or a missing
 * snapshot is reported only once two rounds in a row saw it (a create, snapshot or attach under way between the
 * record's read and the plugin's list is not one). A failing plugin call skips that plugin id for the interval
 * (counted, logged). Thread-safe.
 */
final class ControllerChecks implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ControllerChecks.class);
  /** ListVolumes or ListSnapshots started over at most this often after ABORTED (a token the plugin no longer has). */
  static final int LIST_TRIES = 3;
  /** Pages of one listing at most (a plugin that hands out tokens forever is cut off). */
  static final int MAX_PAGES = 10_000;
  /** How soon after a change of the volume count capacity is read again. */
  static final Duration CAPACITY_SOON = Duration.ofSeconds(1);

  private final ClusterVolumes volumes;
  private final PluginRegistry registry;
  private final Supplier<Map<String, ClusterVolumes.Leadership>> leading;
  private final BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients;
  private final LeaderCalls calls;
  private final VolumeAttacher attacher;
  private final ControllerCounts counts;
  private final Clock clock;
  private final ScheduledExecutorService thread;
  /** Per plugin id, what this agent wrote or read in the current election term. */
  private final Map<String, Term> terms = new ConcurrentHashMap<>();
  /** Per plugin id, the count of its volumes the last round saw. */
  private final Map<String, Integer> volumeCounts = new ConcurrentHashMap<>();
  /** Plugin ids whose capacity read is queued. */
  private final Set<String> capacityQueued = ConcurrentHashMap.newKeySet();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong writes = new AtomicLong();
  private final AtomicLong republished = new AtomicLong();
  private volatile int unrecordedPublications;

  /** What one check of all led plugin ids did. */
  record Result(int plugins, int writes, int failed) {}

  /** Counts for status and metrics. */
  record Counts(long rounds, long writes, long republished, int unrecordedPublications) {}

  /** What is known of one plugin id in one election term: as in etcd, plus what the last round saw. */
  private static final class Term {
    final ClusterVolumes.Leadership leadership;
    Map<String, VolumeCondition> conditions;
    Optional<ControllerLeaks> leaks;
    Map<String, CapacityReading> capacity;
    /** What the last round saw unnamed (volumes, snapshots), unlisted (snapshot records), unrecorded (publications). */
    Set<String> unnamedVolumes = Set.of();
    Set<String> unnamedSnapshots = Set.of();
    Set<String> unlistedSnapshots = Set.of();
    Set<String> unrecorded = Set.of();

    Term(ClusterVolumes.Leadership leadership, ClusterVolumes volumes, String plugin) {
      this.leadership = leadership;
      this.conditions = new TreeMap<>(volumes.conditions(plugin));
      this.leaks = volumes.leaks(plugin);
      this.capacity = new TreeMap<>();
      volumes.capacity(plugin).forEach(r -> capacity.put(r.segmentKey(), r));
    }
  }

  ControllerChecks(ClusterVolumes volumes, PluginRegistry registry,
      Supplier<Map<String, ClusterVolumes.Leadership>> leading,
      BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients, LeaderCalls calls, VolumeAttacher attacher,
      ControllerCounts counts, Clock clock, String nodeId) {
    this.volumes = Objects.requireNonNull(volumes, "volumes");
    this.registry = Objects.requireNonNull(registry, "registry");
    this.leading = Objects.requireNonNull(leading, "leading");
    this.clients = Objects.requireNonNull(clients, "clients");
    this.calls = Objects.requireNonNull(calls, "calls");
    this.attacher = Objects.requireNonNull(attacher, "attacher");
    this.counts = Objects.requireNonNull(counts, "counts");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "cluster-checks-" + nodeId);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A check of every led plugin id every {@code every} (the first after one interval: the rounds elect first).
   *
   * @throws IllegalArgumentException if {@code every} is not positive
   */
  ControllerChecks start(Duration every) {
    dev.csisupervisor.common.Bounds.positive(every, "every");
    thread.scheduleWithFixedDelay(() -> runQuietly(null), every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    return this;
  }

  /** A check of every led plugin id now, on the checks' thread; the future completes when it is done. */
  CompletableFuture<Result> checkNow() {
    return CompletableFuture.supplyAsync(() -> runQuietly(null), thread);
  }

  /** Capacity of the plugin id read again soon (after a create or delete), on the checks' thread. */
  void capacitySoon(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    if (!capacityQueued.add(pluginId)) {
      return;
    }
    try {
      thread.schedule(() -> {
        capacityQueued.remove(pluginId);
        runQuietly(pluginId);
      }, CAPACITY_SOON.toMillis(), TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      capacityQueued.remove(pluginId);
    }
  }

  /**
   * From a controller round: the plugin id's volumes as the round read them. A change of their count (a create or
   * delete done, a register) reads capacity again soon. Cheap; returns at once.
   */
  void volumesSeen(String pluginId, VolumesSnapshot s) {
    int n = (int) s.volumes().stream().filter(v -> v.pluginId().equals(pluginId)).count();
    Integer before = volumeCounts.put(pluginId, n);
    if (before != null && before != n) {
      capacitySoon(pluginId);
    }
  }

  Counts counts() {
    return new Counts(rounds.get(), writes.get(), republished.get(), unrecordedPublications);
  }

  /** @param capacityOnly a plugin id to read only the capacity of; null: every led plugin id, health and capacity */
  private Result runQuietly(String capacityOnly) {
    int plugins = 0;
    int written = 0;
    int failed = 0;
    Map<String, ClusterVolumes.Leadership> led = leading.get();
    terms.keySet().retainAll(led.keySet());
    for (Map.Entry<String, ClusterVolumes.Leadership> e : new TreeMap<>(led).entrySet()) {
      String plugin = e.getKey();
      if (capacityOnly != null && !capacityOnly.equals(plugin)) {
        continue;
      }
      Optional<PluginInfo> controller = registry.list(PluginType.CSI_CONTROLLER).stream()
          .filter(p -> p.name().equals(plugin) && p.health().healthy()).findFirst();
      if (controller.isEmpty()) {
        continue;
      }
      plugins++;
      try {
        written += check(e.getValue(), controller.get(), capacityOnly != null);
      } catch (CallFailed x) {
        failed++;
        String said = "check of plugin " + plugin + ": " + x.getMessage();
        counts.error(said);
        log.warn("cluster controller: {} (skipped until the next interval)", said);
      } catch (NotLeading x) {
        terms.remove(plugin);
      } catch (EtcdException x) {
        failed++;
        terms.remove(plugin); // read again from etcd next time: a write may or may not have been made
        counts.error("check of plugin " + plugin + ": " + x.getMessage());
        log.debug("cluster controller: check of plugin {} deferred: {}", plugin, x.getMessage());
      } catch (RuntimeException x) {
        failed++;
        terms.remove(plugin);
        counts.error("check of plugin " + plugin + ": " + x);
        log.warn("cluster controller: check of plugin {} failed", plugin, x);
      }
    }
    if (capacityOnly == null) {
      rounds.incrementAndGet();
    }
    writes.addAndGet(written);
    return new Result(plugins, written, failed);
  }

  /** One plugin id: health (unless {@code capacityOnly}), then capacity. @return keys written */
  private int check(ClusterVolumes.Leadership l, PluginInfo controller, boolean capacityOnly)
      throws NotLeading, CallFailed {
    String plugin = controller.name();
    Term term = terms.get(plugin);
    if (term == null || !term.leadership.equals(l)) {
      term = new Term(l, volumes, plugin);
      terms.put(plugin, term);
    }
    CsiClient client = clients.apply(l, controller);
    Set<String> caps = controller.fingerprint().controllerCapabilities();
    // Step 1: the records, read before the plugin is asked (what is recorded then, the plugin has by then).
    VolumesSnapshot s = volumes.read();
    int written = 0;
    if (!capacityOnly) {
      written += health(term, controller, client, caps, s);
    }
    if (caps.contains("GET_CAPACITY")) {
      written += capacity(term, controller, client, s);
    }
    return written;
  }

  // ---- health ----

  private int health(Term term, PluginInfo controller, CsiClient client, Set<String> caps, VolumesSnapshot s)
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
      for (VolumeEntry e : listVolumes(l, client, plugin)) {
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
    int written = 0;
    // Step 3: conditions, each kept with the since it was first seen.
    Instant now = clock.instant();
    List<VolumeCondition> conditions = new ArrayList<>();
    for (String vol : registered.keySet()) {
      if (s.deleteOf(plugin, vol).isPresent()) {
        continue; // being deleted: the plugin may lack it already
      }
      VolumeCondition c = null;
      if (missing.containsKey(vol) && confirmedMissing(term, plugin, vol)) {
        c = new VolumeCondition(plugin, vol, VolumeCondition.Kind.MISSING, missing.get(vol), now);
      } else if (seen.containsKey(vol)) {
        Optional<dev.csisupervisor.client.VolumeStats.Condition> cond = seen.get(vol).condition();
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
    if (!sameConditions(wanted, term.conditions)) {
      written += written(volumes.writeConditions(l, plugin, conditions));
      conditions.stream().filter(c -> !c.sameAs(term.conditions.get(c.volumeId())))
          .forEach(c -> log.warn("cluster controller: volume {}/{} is {}", plugin, c.volumeId(), c.describe()));
      term.conditions.keySet().stream().filter(v -> !wanted.containsKey(v))
          .forEach(v -> log.info("cluster controller: volume {}/{} is normal again", plugin, v));
      term.conditions = wanted;
    }
    // Step 4: publications the plugin lost (sent again) and ones no attachment records (reported).
    Set<String> unrecorded = new TreeSet<>();
    if (caps.contains("LIST_VOLUMES_PUBLISHED_NODES")) {
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
      for (VolumeEntry e : seen.values()) {
        String vol = e.volume().volumeId();
        for (String csiNode : e.publishedNodeIds()) {
          if (s.attachmentsOf(plugin, vol).stream().noneMatch(a -> a.csiNodeId().equals(csiNode))) {
            unrecorded.add(vol + "@" + csiNode);
          }
        }
      }
    }
    // Step 5: snapshots.
    Set<String> unnamedSnapshots = Set.of();
    Set<String> unlistedSnapshots = Set.of();
    if (caps.contains("LIST_SNAPSHOTS")) {
      Set<String> records = volumes.snapshotRecordIds(plugin);
      Set<String> listedSnapshots = new TreeSet<>();
      listSnapshots(l, client, plugin).forEach(x -> listedSnapshots.add(x.snapshotId()));
      unnamedSnapshots = minus(listedSnapshots, records);
      unlistedSnapshots = minus(records, listedSnapshots);
    }
    // Step 6: leaks, each seen two rounds in a row.
    Set<String> unnamedVolumes = listed ? minus(seen.keySet(), registered.keySet()) : Set.of();
    ControllerLeaks leaks = new ControllerLeaks(plugin, List.copyOf(both(unnamedVolumes, term.unnamedVolumes)),
        List.copyOf(both(unnamedSnapshots, term.unnamedSnapshots)),
        List.copyOf(both(unlistedSnapshots, term.unlistedSnapshots)), List.copyOf(both(unrecorded, term.unrecorded)),
        now);
    term.unnamedVolumes = unnamedVolumes;
    term.unnamedSnapshots = unnamedSnapshots;
    term.unlistedSnapshots = unlistedSnapshots;
    term.unrecorded = unrecorded;
    unrecordedPublications = leaks.unrecordedPublications().size();
    boolean same = term.leaks.map(leaks::sameAs).orElse(leaks.isEmpty());
    if (!same) {
      if (!leaks.isEmpty()) {
        log.warn("cluster controller: plugin {} has what no record names (left as it is): volumes {}, snapshots {}; "
            + "snapshot records it lacks {}; publications no attachment records {}", plugin, leaks.volumes(),
            leaks.snapshots(), leaks.missingSnapshots(), leaks.unrecordedPublications());
      }
      written += written(volumes.writeLeaks(l, leaks));
      term.leaks = leaks.isEmpty() ? Optional.empty() : Optional.of(leaks);
    }
    return written;
  }

  /**
   * Whether a volume the plugin lacks is still registered, with no delete asked, in etcd itself (the records were read
   * from the watch-fed mirror before the plugin was asked: a delete done meanwhile is not a missing volume). Asked only
   * when it is not MISSING already.
   */
  private boolean confirmedMissing(Term term, String plugin, String vol) {
    VolumeCondition before = term.conditions.get(vol);
    if (before != null && before.kind() == VolumeCondition.Kind.MISSING) {
      return true;
    }
    return volumes.volume(plugin, vol).isPresent()
        && volumes.request(dev.csisupervisor.catalog.ClusterVolumeRequest.Kind.DELETE, plugin, vol).isEmpty();
  }

  private static boolean sameConditions(Map<String, VolumeCondition> a, Map<String, VolumeCondition> b) {
    return a.keySet().equals(b.keySet()) && a.entrySet().stream().allMatch(e -> e.getValue().sameAs(b.get(e.getKey())));
  }

  /** Keys written; a write refused for a lost election ends the check. */
  private static int written(int n) throws NotLeading {
    if (n == ControllerReadings.NOT_LEADING) {
      throw new NotLeading();
    }
    return n;
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

  private List<VolumeEntry> listVolumes(ClusterVolumes.Leadership l, CsiClient client, String plugin)
      throws NotLeading, CallFailed {
    return allPages(l, "ListVolumes of plugin " + plugin, token -> client.listVolumesAsync(0, token),
        VolumePage::entries, VolumePage::nextToken);
  }

  private List<CsiSnapshot> listSnapshots(ClusterVolumes.Leadership l, CsiClient client, String plugin)
      throws NotLeading, CallFailed {
    return allPages(l, "ListSnapshots of plugin " + plugin, token -> client.listSnapshotsAsync(
        new ListSnapshotsRequest(0, token, Optional.empty(), Optional.empty(), Secrets.none())),
        SnapshotPage::entries, SnapshotPage::nextToken);
  }

  /**
   * Every page, from the first; {@code ABORTED} (CSI: the token is no longer valid) starts over from the first page,
   * at most {@value #LIST_TRIES} listings in all. An entry listed on two pages (the plugin's list changed between
   * them) is kept once.
   */
  private <T, P> List<T> allPages(ClusterVolumes.Leadership l, String what,
      Function<Optional<String>, CompletableFuture<P>> page, Function<P, List<T>> entries,
      Function<P, Optional<String>> next) throws NotLeading, CallFailed {
    for (int attempt = 1; ; attempt++) {
      Set<T> out = new LinkedHashSet<>();
      Optional<String> token = Optional.empty();
      try {
        for (int pages = 1; ; pages++) {
          if (pages > MAX_PAGES) {
            throw new CallFailed(what + ": more than " + MAX_PAGES + " pages (the plugin's tokens never end)", null);
          }
          Optional<String> from = token;
          P p = calls.call(l, what + " (page " + pages + ")", () -> page.apply(from));
          out.addAll(entries.apply(p));
          token = next.apply(p);
          if (token.isEmpty()) {
            return List.copyOf(out);
          }
        }
      } catch (CallFailed e) {
        if (attempt >= LIST_TRIES || e.getCause() == null
            || CsiOutcome.code(e.getCause()).orElse(null) != StatusCode.ABORTED) {
          throw e;
        }
        log.info("cluster controller: {} ABORTED at a token ({}): started over from the first page", what,
            e.getMessage());
      }
    }
  }

  // ---- capacity ----

  private int capacity(Term term, PluginInfo controller, CsiClient client, VolumesSnapshot s)
      throws NotLeading, CallFailed {
    ClusterVolumes.Leadership l = term.leadership;
    String plugin = controller.name();
    // The segments: each distinct topology of the plugin id's node plugins, if the plugin takes topology.
    Set<Map<String, String>> segments = new LinkedHashSet<>();
    if (controller.fingerprint().pluginCapabilities().contains(CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS)) {
      for (CatalogEntry e : volumes.nodePluginsOf(plugin)) {
        if (!e.accessibleTopology().isEmpty()) {
          segments.add(new TreeMap<>(e.accessibleTopology()));
        }
      }
    }
    if (segments.isEmpty()) {
      segments.add(Map.of());
    }
    // The parameter sets: none, then each distinct one of the registered volumes.
    Set<Map<String, String>> parameterSets = new LinkedHashSet<>();
    parameterSets.add(Map.of());
    s.volumes().stream().filter(v -> v.pluginId().equals(plugin)).map(v -> (Map<String, String>) new TreeMap<>(
        v.parameters())).forEach(parameterSets::add);
    Instant now = clock.instant();
    Map<String, CapacityReading> readings = new TreeMap<>();
    for (Map<String, String> segment : segments) {
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
    int written = written(volumes.writeCapacity(l, plugin, readings.values()));
    term.capacity = readings;
    log.debug("cluster controller: capacity of plugin {}: {}", plugin, readings.values());
    return written;
  }

  @Override
  public void close() {
    thread.shutdownNow();
    try {
      thread.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
