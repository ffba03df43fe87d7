package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClaimAccess;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller side of cluster volumes on one agent: for every plugin id whose controller runs here, healthy,
 * with {@code PUBLISH_UNPUBLISH_VOLUME} or {@code CREATE_DELETE_VOLUME}, campaigns for the plugin id's election key
 * and, while it holds it, makes the volumes what the create and delete requests ask and (with
 * {@code PUBLISH_UNPUBLISH_VOLUME}) the attachments what the claims say (level-triggered, from etcd alone, so a
 * successor simply acts again):
 * <ol>
 *   <li>the attachments, per volume ({@link VolumeAttacher}: the intent before each publish, detaches first, the
 *       fence of lost nodes past {@code detachAfter}, many volumes at once and each one call at a time, every call
 *       ended before the election lease could expire);</li>
 *   <li>each pending create or delete request, in the order asked: the attempt written (who, when), then
 *       CreateVolume by the request's name (idempotent: a successor that finds an attempt of a dead agent simply
 *       sends it again, and the plugin answers the same volume) or DeleteVolume (NOT_FOUND: done), then the outcome:
 *       the volume registered and the request done, or the volume's key removed, in one transaction; UNAVAILABLE,
 *       DEADLINE_EXCEEDED and ABORTED (and no answer at all: {@code CsiOutcome.uncertain}) are retried with backoff ({@link
 *       RequestRetry}); other codes fail the request with the plugin's words. Secrets are never in etcd: a request
 *       names at most a secrets file, read here when the call is made.</li>
 * </ol>
 * Every etcd write is conditional on the election key being still this agent's. One round per tick on its own
 * thread ({@link #runOnce}); thread-safe.
 */
public final class ClusterController implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ClusterController.class);
  /** Creates and deletes under way at once at most (of different requests). */
  private static final int PROVISIONING_THREADS = 4;
  /** Volumes whose attach or detach is under way at once at most (each volume one call at a time). */
  private static final int ATTACHING_THREADS = 8;

  private final ClusterVolumes volumes;
  private final String nodeId;
  private final PluginRegistry registry;
  private final Function<PluginInfo, CsiClient> clients;
  /** Whether controller calls carry this agent's identity and election revision ({@link #identifyCalls}). */
  private volatile boolean identify;
  private volatile RequestSecrets secrets;
  /** Per plugin id, the identified view of its client for the current election term. */
  private final Map<String, IdentifiedClient> identified = new ConcurrentHashMap<>();
  private final Duration callTimeout;
  private final Optional<Duration> detachAfter;
  private final Clock clock;
  private final ScheduledExecutorService loop;
  private final Map<String, ClusterVolumes.Leadership> leading = new ConcurrentHashMap<>();
  /** Elections given up here whose resign etcd has not taken yet: tried again each round. */
  private final Map<String, ClusterVolumes.Leadership> resigning = new ConcurrentHashMap<>();
  /** Requests whose attempt is under way on {@link #provisioner}, by kind, plugin and name. */
  private final Set<String> provisioning = ConcurrentHashMap.newKeySet();
  /** Where creates and deletes run, beside the rounds: a few at once, each request one at a time. */
  private final ExecutorService provisioner;
  /** Where attaches and detaches run: many volumes at once, each one call at a time. */
  private final ExecutorService attachers;
  private final VolumeAttacher attacher;
  private final LeaderCalls calls;
  private final ControllerCounts counts = new ControllerCounts();
  private final RequestRetry retry;
  private volatile AutoCloseable hints; // the watch that wakes a round, once started
  private final AtomicBoolean roundQueued = new AtomicBoolean();

  /**
   * @param clients a client for a controller registration (the agent caches them per socket)
   * @param detachAfter how long a lost node's claims stay before the fence (empty: forever, the default)
   */
  public ClusterController(ClusterVolumes volumes, String nodeId, PluginRegistry registry,
      Function<PluginInfo, CsiClient> clients, Duration callTimeout, Optional<Duration> detachAfter, Clock clock) {
    this(volumes, nodeId, registry, clients, callTimeout, detachAfter, clock, RequestRetry.DEFAULT);
  }

  /** @param retry the delays before a create or delete is sent again after a retriable error */
  public ClusterController(ClusterVolumes volumes, String nodeId, PluginRegistry registry,
      Function<PluginInfo, CsiClient> clients, Duration callTimeout, Optional<Duration> detachAfter, Clock clock,
      RequestRetry retry) {
    this.retry = Objects.requireNonNull(retry, "retry");
    this.volumes = Objects.requireNonNull(volumes, "volumes");
    this.nodeId = Objects.requireNonNull(nodeId, "nodeId");
    this.registry = Objects.requireNonNull(registry, "registry");
    this.clients = Objects.requireNonNull(clients, "clients");
    this.callTimeout = Objects.requireNonNull(callTimeout, "callTimeout");
    this.detachAfter = Objects.requireNonNull(detachAfter, "detachAfter");
    this.clock = Objects.requireNonNull(clock, "clock");
    this.loop = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "cluster-controller-" + nodeId);
      t.setDaemon(true);
      return t;
    });
    this.provisioner = Executors.newFixedThreadPool(PROVISIONING_THREADS, r -> {
      Thread t = new Thread(r, "cluster-provisioner-" + nodeId);
      t.setDaemon(true);
      return t;
    });
    this.attachers = Executors.newFixedThreadPool(ATTACHING_THREADS, r -> {
      Thread t = new Thread(r, "cluster-attacher-" + nodeId);
      t.setDaemon(true);
      return t;
    });
    this.calls = new LeaderCalls(volumes, callTimeout);
    this.secrets = new RequestSecrets(nodeId, Optional.empty());
    this.attacher = new VolumeAttacher(volumes, nodeId, calls, detachAfter, clock, retry, attachers, counts);
    volumes.onLeaseLost(calls::cancelAll);
  }

  /**
   * Starts a round every {@code every}, and one as soon as claims, attachments or requests change in etcd (a watch's
   * hint, {@link ClusterVolumes#watchChanges}; hints that come while a round is queued make no second one). The
   * timer is what the rounds rely on; the hint only makes a new claim's attach, a released claim's detach or a new
   * request start now instead of up to {@code every} later.
   */
  public ClusterController start(Duration every) {
    loop.scheduleWithFixedDelay(this::runQuietly, 0, every.toMillis(), TimeUnit.MILLISECONDS);
    hints = volumes.watchChanges(() -> {
      if (roundQueued.compareAndSet(false, true)) {
        try {
          loop.execute(() -> {
            roundQueued.set(false);
            runQuietly();
          });
        } catch (RejectedExecutionException closing) {
          roundQueued.set(false);
        }
      }
    });
    return this;
  }

  private void runQuietly() {
    try {
      runOnce();
    } catch (EtcdException e) {
      counts.error(e.getMessage());
      log.debug("cluster controller: round deferred: {}", e.getMessage());
    } catch (RuntimeException e) {
      counts.error(e.toString());
      log.warn("cluster controller: round failed", e);
    }
  }

  private record IdentifiedClient(ClusterVolumes.Leadership leadership, CsiClient base, CsiClient view) {}

  /**
   * Every controller call from now on carries this agent's node id and its election key's revision as gRPC
   * metadata ({@link CsiClient#withCallerIdentity}), so that a plugin (or the test cloud's oracle) can tell a call of
   * a deposed controller agent from its successor's. Call before {@link #start}.
   */
  public ClusterController identifyCalls() {
    identify = true;
    return this;
  }

  /**
   * Reads requests' secrets files only under {@code directory} (symbolic links resolved); without this, anywhere.
   *
   * @throws IllegalArgumentException if {@code directory} is not absolute
   */
  public ClusterController secretsUnder(Path directory) {
    secrets = new RequestSecrets(nodeId, Optional.of(directory));
    return this;
  }

  /** The client for the plugin's controller calls in the election term {@code l}. */
  private CsiClient client(ClusterVolumes.Leadership l, PluginInfo controller) {
    CsiClient base = clients.apply(controller);
    if (!identify) {
      return base;
    }
    IdentifiedClient c = identified.compute(l.pluginId(), (k, old) -> old != null && old.leadership().equals(l)
        && old.base() == base ? old : new IdentifiedClient(l, base, base.withCallerIdentity(nodeId,
            l.createRevision())));
    return c.view();
  }

  /** The plugin ids this agent leads now. */
  public Set<String> leading() {
    return Set.copyOf(leading.keySet());
  }

  /** The controller calls under way now, in words (for status). */
  public Set<String> inFlight() {
    return calls.inFlight();
  }

  /** Counts for metrics and status: publishes, unpublishes, fenced nodes' claims, volumes created and deleted. */
  public record Counts(long publishes, long unpublishes, long fenced, long creates, long deletes, String lastError) {}

  public Counts counts() {
    return counts.snapshot();
  }

  /**
   * How long a create or delete waits after a retriable error: {@code initial}, doubled per attempt, at most
   * {@code max}. Computed from the attempts the request records, so a successor keeps the pace.
   */
  public record RequestRetry(Duration initial, Duration max) {
    public static final RequestRetry DEFAULT = new RequestRetry(Duration.ofSeconds(1), Duration.ofMinutes(1));

    public RequestRetry {
      dev.csisupervisor.common.Bounds.positive(initial, "initial");
      if (max.compareTo(initial) < 0) {
        throw new IllegalArgumentException("max must be at least initial, got " + max + " < " + initial);
      }
    }

    /** The wait after the {@code attempts}-th attempt failed (attempts >= 1). */
    public Duration after(int attempts) {
      Duration d = initial;
      for (int i = 1; i < attempts && d.compareTo(max) < 0; i++) {
        d = d.multipliedBy(2);
      }
      return d.compareTo(max) > 0 ? max : d;
    }
  }

  /** One round: campaign for each eligible plugin id, then reconcile the ones led. */
  public void runOnce() {
    Map<String, PluginInfo> controllers = new HashMap<>();
    for (PluginInfo p : registry.list(PluginType.CSI_CONTROLLER)) {
      Set<String> caps = p.fingerprint().controllerCapabilities();
      if (!p.health().healthy()) {
        continue;
      }
      if (caps.contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME)) {
        controllers.put(p.name(), p);
      } else if (caps.contains(CsiCapabilities.CREATE_DELETE_VOLUME) && !volumes.controllerPublishes(p.name())) {
        // One that only creates and deletes leads only where no controller of the id publishes: the controller agent
        // of a plugin id that attaches must be able to attach.
        controllers.put(p.name(), p);
      }
    }
    for (String gone : List.copyOf(leading.keySet())) {
      if (!controllers.containsKey(gone)) {
        resigning.put(gone, leading.remove(gone));
        log.info("cluster controller: controller {} no longer healthy here: giving up its election", gone);
      }
    }
    // A resign etcd did not take is tried again, so that no plugin id is left with an agent that does not act (its
    // key would otherwise stay until the whole election lease goes).
    for (Map.Entry<String, ClusterVolumes.Leadership> r : List.copyOf(resigning.entrySet())) {
      if (controllers.containsKey(r.getKey())) {
        resigning.remove(r.getKey()); // healthy again: it campaigns below
        continue;
      }
      try {
        volumes.resign(r.getValue());
        resigning.remove(r.getKey());
      } catch (EtcdException e) {
        counts.error("resign of plugin " + r.getKey() + ": " + e.getMessage());
        log.warn("cluster controller: giving up the election of {} failed ({}); tried again next round",
            r.getKey(), e.getMessage());
      }
    }
    if (controllers.isEmpty()) {
      return;
    }
    VolumesSnapshot snapshot = null;
    for (PluginInfo p : controllers.values()) {
      Optional<ClusterVolumes.Leadership> l = volumes.lead(p.name());
      if (l.isEmpty()) {
        leading.remove(p.name());
        continue;
      }
      if (!l.get().equals(leading.put(p.name(), l.get()))) {
        volumes.rememberCapabilities(l.get(), p.fingerprint().controllerCapabilities());
      }
      if (snapshot == null) {
        snapshot = volumes.read();
      }
      reconcile(l.get(), p, snapshot);
    }
  }

  private void reconcile(ClusterVolumes.Leadership l, PluginInfo controller, VolumesSnapshot s) {
    if (controller.fingerprint().controllerCapabilities().contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME)) {
      attacher.reconcile(l, controller, client(l, controller), s);
    }
    provision(l, controller, s);
  }

  // ---- create and delete requests ----

  /** Every due request of the plugin id, oldest first; each one attempt per round at most. */
  private void provision(ClusterVolumes.Leadership l, PluginInfo controller, VolumesSnapshot s) {
    List<ClusterVolumeRequest> due = s.openRequests(controller.name()).stream()
        .filter(r -> r.state() == ClusterVolumeRequest.State.PENDING)
        .filter(r -> r.nextAttempt().map(t -> !t.isAfter(clock.instant())).orElse(true))
        .sorted(java.util.Comparator.comparing(ClusterVolumeRequest::requested))
        .toList();
    if (due.isEmpty()) {
      return;
    }
    CsiClient client = client(l, controller);
    for (ClusterVolumeRequest r : due) {
      String key = r.kind() + " " + r.pluginId() + "/" + r.name();
      if (!provisioning.add(key)) {
        continue; // its call is under way (a round does not wait for it)
      }
      try {
        provisioner.execute(() -> {
          try {
            provisionOne(l, controller, client, r);
          } catch (EtcdException e) {
            counts.error(e.getMessage());
            log.debug("cluster controller: {} deferred: {}", r.describe(), e.getMessage());
          } catch (RuntimeException e) {
            counts.error(e.toString());
            log.warn("cluster controller: {} failed here", r.describe(), e);
          } finally {
            provisioning.remove(key);
          }
        });
      } catch (RejectedExecutionException closing) {
        provisioning.remove(key);
        return;
      }
    }
  }

  /**
   * One request's attempt, on a provisioning thread: a CreateVolume can take minutes in a real cloud, and the
   * round that found it must go on publishing and unpublishing meanwhile (a round made every call in turn, so one slow
   * create held every attach of the plugin id back).
   */
  private void provisionOne(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client,
      ClusterVolumeRequest r) {
    if (!controller.fingerprint().controllerCapabilities().contains(CsiCapabilities.CREATE_DELETE_VOLUME)) {
      String why = r.describe() + " failed: controller plugin " + controller.name() + " of controller agent "
          + nodeId + " does not offer " + CsiCapabilities.CREATE_DELETE_VOLUME;
      counts.error(why);
      volumes.updateRequest(l, r, r.failed(why));
      return;
    }
    // Step 1: the attempt, written before the call: who sends it, since when (status shows it in flight).
    Optional<ClusterVolumeRequest> sent = volumes.updateRequest(l, r, r.sending(nodeId, clock.instant()));
    if (sent.isEmpty()) {
      return; // changed meanwhile (withdrawn, asked again) or no longer ours: the next round reads it again
    }
    if (r.kind() == ClusterVolumeRequest.Kind.CREATE) {
      create(l, controller, client, sent.get());
    } else {
      delete(l, client, sent.get());
    }
  }

  private void create(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, ClusterVolumeRequest r) {
    String what = "CreateVolume " + r.name() + " (" + r.describe() + ")";
    ClusterVolumeRequest.Spec spec = r.spec();
    CreateVolumeRequest asked;
    try {
      Optional<TopologyRequirement> topology = spec.requisite().isEmpty() && spec.preferred().isEmpty()
          ? Optional.empty() : Optional.of(new TopologyRequirement(spec.requisite(), spec.preferred()));
      if (topology.isPresent() && !controller.fingerprint().pluginCapabilities()
          .contains(CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS)) {
        finish(l, r, r.failed(r.describe() + " failed: controller plugin " + controller.name() + " does not offer "
            + CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS + ", so a topology cannot be asked of it (CSI)"));
        return;
      }
      List<VolumeCapability> capabilities = new ArrayList<>();
      for (dev.csisupervisor.catalog.VolumeAccessMode m : spec.accessModes()) {
        AccessMode mode = AccessMode.valueOf(m.name());
        capabilities.add(VolumeAttacher.capability(new ClaimAccess(spec.block(), spec.fsType()), mode));
      }
      Optional<CapacityRange> capacity = spec.requiredBytes() == 0 && spec.limitBytes() == 0 ? Optional.empty()
          : Optional.of(new CapacityRange(spec.requiredBytes(), spec.limitBytes()));
      asked = new CreateVolumeRequest(r.name(), capacity, capabilities, spec.parameters(), secrets(r), topology);
    } catch (RequestSecrets.Unreadable e) {
      finish(l, r, r.failed(r.describe() + " failed: " + e.getMessage()));
      return;
    } catch (IllegalArgumentException e) {
      finish(l, r, r.failed(r.describe() + " failed: " + e.getMessage()));
      return;
    }
    CsiVolume made;
    try {
      made = calls.call(l, what, () -> client.createVolumeAsync(asked));
    } catch (LeaderCalls.NotLeading e) {
      return; // the attempt stays PENDING: the successor sends it again by name
    } catch (LeaderCalls.CallFailed e) {
      callFailed(l, r, what, e.getCause(), false);
      return;
    }
    counts.created();
    ClusterVolume volume;
    try {
      volume = new ClusterVolume(r.pluginId(), made.volumeId(), made.capacityBytes(), spec.accessModes(),
          made.accessibleTopology(), spec.parameters(), made.volumeContext());
    } catch (IllegalArgumentException e) {
      finish(l, r, r.failed(r.describe() + ": CreateVolume answered a volume the cluster cannot register: "
          + e.getMessage()));
      return;
    }
    try {
      if (volumes.completeCreate(l, r, volume)) {
        log.info("cluster controller: {} done: volume {} ({} bytes) registered", what, made.volumeId(),
            made.capacityBytes());
      } else if (volumes.request(r.kind(), r.pluginId(), r.name()).isEmpty()) {
        // Cancelled while the plugin made it: nobody wants the disk, and no record names it. Deleted again, by the id
        // the plugin gave (an etcd failure instead leaves the request pending: sent again by name, the same disk).
        undoCreate(l, client, r, made.volumeId());
      }
    } catch (VolumeStateException e) {
      finish(l, r, r.failed(e.getMessage()));
    }
  }

  /** DeleteVolume of a volume a cancelled create made; a failure is said with the id (the disk to delete by hand). */
  private void undoCreate(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest r, String volumeId) {
    String what = "DeleteVolume " + volumeId + " (made by " + r.describe() + ", cancelled meanwhile)";
    try {
      calls.call(l, what, () -> client.deleteVolumeAsync(volumeId, dev.csisupervisor.client.Secrets.none()));
      counts.deleted();
      log.info("cluster controller: {} done: no disk left that no record names", what);
    } catch (LeaderCalls.NotLeading | LeaderCalls.CallFailed e) {
      String said = what + " failed (" + e.getMessage() + "): volume " + volumeId + " of plugin " + r.pluginId()
          + " exists and no record names it; delete it by hand, or create " + r.name() + " again to register it";
      counts.error(said);
      log.error("cluster controller: {}", said);
    }
  }

  private void delete(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest r) {
    String what = "DeleteVolume " + r.name() + " (" + r.describe() + ")";
    dev.csisupervisor.client.Secrets secrets;
    try {
      secrets = secrets(r);
    } catch (RequestSecrets.Unreadable e) {
      finish(l, r, r.failed(r.describe() + " failed: " + e.getMessage()));
      return;
    }
    try {
      calls.call(l, what, () -> client.deleteVolumeAsync(r.name(), secrets));
    } catch (LeaderCalls.NotLeading e) {
      return;
    } catch (LeaderCalls.CallFailed e) {
      if (callFailed(l, r, what, e.getCause(), true)) {
        return;
      }
    }
    counts.deleted();
    if (volumes.completeDelete(l, r)) {
      log.info("cluster controller: {} done: the volume's key removed", what);
    } else if (volumes.request(r.kind(), r.pluginId(), r.name()).isEmpty()) {
      // Cancelled while the plugin deleted it: the disk is gone all the same, so its record goes too.
      try {
        if (volumes.deregister(r.pluginId(), r.name())) {
          log.info("cluster controller: {} done after its cancel: the disk is gone, its record removed", what);
        }
      } catch (VolumeStateException e) {
        counts.error(what + ": " + e.getMessage());
        log.warn("cluster controller: {} succeeded after its cancel, but the record stays: {}", what, e.getMessage());
      }
    }
  }

  /**
   * Writes a failed call's outcome: retried later (a retriable code, or no answer) or failed (the plugin's words).
   *
   * @return true if handled; false for a delete answered NOT_FOUND (already gone: done)
   */
  private boolean callFailed(ClusterVolumes.Leadership l, ClusterVolumeRequest r, String what, Throwable cause,
      boolean delete) {
    Optional<StatusCode> code = CsiOutcome.code(cause);
    if (delete && CsiOutcome.notFound(cause)) {
      return false;
    }
    String said = what + ": " + code.map(c -> c + ": ").orElse("") + cause.getMessage();
    counts.error(said);
    if (CsiOutcome.uncertain(cause)) {
      java.time.Instant next = clock.instant().plus(retry.after(Math.max(1, r.attempts())));
      log.info("cluster controller: {}; sent again at {} (attempt {} done)", said, next, r.attempts());
      finish(l, r, r.retryAt(next, said));
    } else {
      log.warn("cluster controller: {} failed: {}", what, said);
      finish(l, r, r.failed(said));
    }
    return true;
  }

  private void finish(ClusterVolumes.Leadership l, ClusterVolumeRequest from, ClusterVolumeRequest to) {
    if (to.state() == ClusterVolumeRequest.State.FAILED) {
      counts.error(to.message());
    }
    volumes.updateRequest(l, from, to);
  }

  /** A request's secrets file, read now on this machine (never in etcd). */
  private dev.csisupervisor.client.Secrets secrets(ClusterVolumeRequest r) throws RequestSecrets.Unreadable {
    return secrets.read(r.pluginId(), r.secretsFile());
  }

  /** When this agent last saw each lost node with claims (for status). */
  public Map<String, Instant> lostNodes() {
    return attacher.lostNodes();
  }

  @Override
  public void close() {
    AutoCloseable h = hints;
    if (h != null) {
      try {
        h.close();
      } catch (Exception e) {
        log.debug("closing the change hints failed", e);
      }
    }
    loop.shutdownNow();
    provisioner.shutdownNow(); // a call under way is abandoned unanswered: its request stays PENDING for a successor
    attachers.shutdownNow(); // likewise: an ATTACHING intent stays, for a successor to send again
    try {
      loop.awaitTermination(callTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      provisioner.awaitTermination(callTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      attachers.awaitTermination(callTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
