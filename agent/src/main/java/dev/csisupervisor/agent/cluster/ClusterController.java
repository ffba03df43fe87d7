package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClaimAccess;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
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
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiException;
import dev.csisupervisor.client.CsiStatusException;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.common.Futures;
import dev.csisupervisor.common.SecretsFiles;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
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
import java.util.concurrent.atomic.AtomicLong;
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
 *   <li>a (volume, node) with claims and no attachment (or a {@code FAILED} one, tried again): ControllerPublishVolume
 *       for the node plugin's node id, then {@code ATTACHED} with the publish context; a final error is written
 *       {@code FAILED} with the RPC, code and message (the node's mount fails with it); UNAVAILABLE,
 *       DEADLINE_EXCEEDED and ABORTED are tried again on the next round;</li>
 *   <li>an attachment whose node has no claim left: {@code DETACHING} (only if still no claim), then
 *       ControllerUnpublishVolume (NOT_FOUND: already done, as the spec says), then the key deleted; a
 *       {@code DETACHING} found after a failover is finished the same way;</li>
 *   <li>with {@code detachAfter} set: a node whose lease is gone for longer than that has its attachments
 *       unpublished (the fence) and only then its claims deleted; never on the lease expiry alone.</li>
 *   <li>each pending create or delete request, in the order asked: the attempt written (who, when), then
 *       CreateVolume by the request's name (idempotent: a successor that finds an attempt of a dead agent simply
 *       sends it again, and the plugin answers the same volume) or DeleteVolume (NOT_FOUND: done), then the outcome:
 *       the volume registered and the request done, or the volume's key removed, in one transaction; UNAVAILABLE,
 *       DEADLINE_EXCEEDED, ABORTED and CANCELLED (and no answer at all) are retried with backoff ({@link
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
  private static final Set<StatusCode> UNCERTAIN = Set.of(StatusCode.UNAVAILABLE, StatusCode.DEADLINE_EXCEEDED,
      StatusCode.ABORTED);

  private final ClusterVolumes volumes;
  private final String nodeId;
  private final PluginRegistry registry;
  private final Function<PluginInfo, CsiClient> clients;
  private final Duration callTimeout;
  private final Optional<Duration> detachAfter;
  private final Clock clock;
  private final ScheduledExecutorService loop;
  /** Per lost node, when this agent first saw its lease gone (nanoTime). */
  private final Map<String, Long> lostSince = new ConcurrentHashMap<>();
  private final Map<String, ClusterVolumes.Leadership> leading = new ConcurrentHashMap<>();
  /** Controller calls under way, in words ("ControllerPublishVolume of V to node N"). */
  private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
  /** Requests whose attempt is under way on {@link #provisioner}, by kind, plugin and name. */
  private final Set<String> provisioning = ConcurrentHashMap.newKeySet();
  /** Where creates and deletes run, beside the rounds: a few at once, each request one at a time. */
  private final ExecutorService provisioner;
  private final AtomicLong publishes = new AtomicLong();
  private final AtomicLong unpublishes = new AtomicLong();
  private final AtomicLong fenced = new AtomicLong();
  private final AtomicLong creates = new AtomicLong();
  private final AtomicLong deletes = new AtomicLong();
  private final RequestRetry retry;
  private volatile String lastError = "";
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
      lastError = e.getMessage();
      log.debug("cluster controller: round deferred: {}", e.getMessage());
    } catch (RuntimeException e) {
      lastError = e.toString();
      log.warn("cluster controller: round failed", e);
    }
  }

  /** The plugin ids this agent leads now. */
  public Set<String> leading() {
    return Set.copyOf(leading.keySet());
  }

  /** The controller calls under way now, in words (for status). */
  public Set<String> inFlight() {
    return Set.copyOf(inFlight);
  }

  /** Counts for metrics and status: publishes, unpublishes, fenced nodes' claims, volumes created and deleted. */
  public record Counts(long publishes, long unpublishes, long fenced, long creates, long deletes, String lastError) {}

  public Counts counts() {
    return new Counts(publishes.get(), unpublishes.get(), fenced.get(), creates.get(), deletes.get(), lastError);
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
        ClusterVolumes.Leadership l = leading.remove(gone);
        log.info("cluster controller: controller {} no longer healthy here: giving up its election", gone);
        volumes.resign(l);
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
      leading.put(p.name(), l.get());
      if (snapshot == null) {
        snapshot = volumes.read();
      }
      reconcile(l.get(), p, snapshot);
    }
  }

  private record Target(String volumeId, String nodeId) {}

  private void reconcile(ClusterVolumes.Leadership l, PluginInfo controller, VolumesSnapshot s) {
    if (controller.fingerprint().controllerCapabilities().contains(CsiCapabilities.PUBLISH_UNPUBLISH_VOLUME)) {
      reconcileAttachments(l, controller, s);
    }
    provision(l, controller, s);
  }

  private void reconcileAttachments(ClusterVolumes.Leadership l, PluginInfo controller, VolumesSnapshot s) {
    String plugin = controller.name();
    Map<Target, List<ClusterClaim>> claims = new HashMap<>();
    for (ClusterClaim c : s.claims()) {
      if (c.pluginId().equals(plugin)) {
        claims.computeIfAbsent(new Target(c.volumeId(), c.nodeId()), k -> new ArrayList<>()).add(c);
      }
    }
    Map<Target, ClusterAttachment> attachments = new HashMap<>();
    for (ClusterAttachment a : s.attachments()) {
      if (a.pluginId().equals(plugin)) {
        attachments.put(new Target(a.volumeId(), a.nodeId()), a);
      }
    }
    Map<String, ClusterVolume> registered = new HashMap<>();
    s.volumes().stream().filter(v -> v.pluginId().equals(plugin)).forEach(v -> registered.put(v.volumeId(), v));
    CsiClient client = clients.apply(controller);
    // Step 1: unpublish what no claim needs. First, so that a single-node volume handed from one node to another is
    // detached from the first before it is attached to the second.
    Set<Target> detached = new HashSet<>();
    attachments.forEach((t, a) -> {
      if ((!claims.containsKey(t) || a.state() == ClusterAttachment.State.DETACHING) && unpublish(l, client, a, false)) {
        detached.add(t);
      }
    });
    // Step 2: publish what the claims need. A single-node claim whose volume is still attached to another node waits
    // for that detach (a later round publishes it; the node waits for its attachment meanwhile), as the kubelet's
    // attach/detach controller waits on a multi-attach: never a second attachment of a single-node disk tried.
    claims.forEach((t, cs) -> {
      ClusterAttachment a = attachments.get(t);
      if (a == null || a.state() == ClusterAttachment.State.FAILED) {
        Optional<Target> elsewhere = attachments.entrySet().stream()
            .filter(e -> e.getKey().volumeId().equals(t.volumeId()) && !e.getKey().nodeId().equals(t.nodeId())
                && !detached.contains(e.getKey()) && e.getValue().state() != ClusterAttachment.State.FAILED)
            .map(Map.Entry::getKey).findFirst();
        if (elsewhere.isPresent() && cs.stream().anyMatch(c -> !c.mode().multiNode())) {
          log.debug("cluster controller: {} to node {} waits: still attached to node {}", t.volumeId(), t.nodeId(),
              elsewhere.get().nodeId());
          return;
        }
        publish(l, controller, client, t, cs, Optional.ofNullable(registered.get(t.volumeId())));
      }
    });
    // Step 3: lost nodes past detach_after: fenced by the unpublish, then their claims go.
    if (detachAfter.isPresent()) {
      long now = System.nanoTime();
      lostSince.keySet().retainAll(claims.keySet().stream().map(Target::nodeId).filter(n -> !s.liveNodes().contains(n)).toList());
      for (Target t : claims.keySet()) {
        if (s.liveNodes().contains(t.nodeId())) {
          continue;
        }
        long since = lostSince.computeIfAbsent(t.nodeId(), n -> now);
        if (now - since < detachAfter.get().toNanos()) {
          continue;
        }
        ClusterAttachment a = attachments.get(t);
        if (a == null) {
          // Never attached (or already unpublished): nothing to fence; the claims go.
          if (volumes.deleteAttachment(l, plugin, t.volumeId(), t.nodeId(), true)) {
            fenced.addAndGet(claims.get(t).size());
            log.warn("cluster controller: node {} lost for over {}: its claims of {} released (no attachment to fence)",
                t.nodeId(), detachAfter.get(), t.volumeId());
          }
        } else {
          unpublishLost(l, client, a, claims.get(t).size());
        }
      }
    }
  }

  // ---- create and delete requests ----

  /** Codes after which a create or delete is sent again (CSI: the operation may still be under way, or be retried). */
  private static final Set<StatusCode> RETRIABLE = Set.of(StatusCode.UNAVAILABLE, StatusCode.DEADLINE_EXCEEDED,
      StatusCode.ABORTED, StatusCode.CANCELLED);

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
    CsiClient client = clients.apply(controller);
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
            lastError = e.getMessage();
            log.debug("cluster controller: {} deferred: {}", r.describe(), e.getMessage());
          } catch (RuntimeException e) {
            lastError = e.toString();
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
      lastError = why;
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
        capabilities.add(capability(new ClaimAccess(spec.block(), spec.fsType()), mode));
      }
      Optional<CapacityRange> capacity = spec.requiredBytes() == 0 && spec.limitBytes() == 0 ? Optional.empty()
          : Optional.of(new CapacityRange(spec.requiredBytes(), spec.limitBytes()));
      asked = new CreateVolumeRequest(r.name(), capacity, capabilities, spec.parameters(), secrets(r), topology);
    } catch (SecretsUnreadable e) {
      finish(l, r, r.failed(r.describe() + " failed: " + e.getMessage()));
      return;
    } catch (IllegalArgumentException e) {
      finish(l, r, r.failed(r.describe() + " failed: " + e.getMessage()));
      return;
    }
    inFlight.add(what);
    CsiVolume made;
    try {
      made = client.createVolumeAsync(asked).get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    } catch (Exception e) {
      callFailed(l, r, what, e, false);
      return;
    } finally {
      inFlight.remove(what);
    }
    creates.incrementAndGet();
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
      }
    } catch (VolumeStateException e) {
      finish(l, r, r.failed(e.getMessage()));
    }
  }

  private void delete(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest r) {
    String what = "DeleteVolume " + r.name() + " (" + r.describe() + ")";
    dev.csisupervisor.client.Secrets secrets;
    try {
      secrets = secrets(r);
    } catch (SecretsUnreadable e) {
      finish(l, r, r.failed(r.describe() + " failed: " + e.getMessage()));
      return;
    }
    inFlight.add(what);
    try {
      client.deleteVolumeAsync(r.name(), secrets).get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    } catch (Exception e) {
      if (callFailed(l, r, what, e, true)) {
        return;
      }
    } finally {
      inFlight.remove(what);
    }
    deletes.incrementAndGet();
    if (volumes.completeDelete(l, r)) {
      log.info("cluster controller: {} done: the volume's key removed", what);
    }
  }

  /**
   * Writes a failed call's outcome: retried later (a retriable code, or no answer) or failed (the plugin's words).
   *
   * @return true if handled; false for a delete answered NOT_FOUND (already gone: done)
   */
  private boolean callFailed(ClusterVolumes.Leadership l, ClusterVolumeRequest r, String what, Exception e,
      boolean delete) {
    Throwable cause = Futures.unwrap(e);
    Optional<StatusCode> code = CsiException.find(cause).filter(x -> x instanceof CsiStatusException)
        .map(x -> ((CsiStatusException) x).code());
    if (delete && code.equals(Optional.of(StatusCode.NOT_FOUND))) {
      return false;
    }
    String said = what + ": " + code.map(c -> c + ": ").orElse("") + cause.getMessage();
    lastError = said;
    if (code.isEmpty() || RETRIABLE.contains(code.get())) {
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
      lastError = to.message();
    }
    volumes.updateRequest(l, from, to);
  }

  /** A request's secrets file, read now on this machine (never in etcd). */
  private dev.csisupervisor.client.Secrets secrets(ClusterVolumeRequest r) throws SecretsUnreadable {
    if (r.secretsFile().isEmpty()) {
      return dev.csisupervisor.client.Secrets.none();
    }
    try {
      return dev.csisupervisor.client.Secrets.of(SecretsFiles.read(r.secretsFile().get()));
    } catch (java.io.IOException | IllegalArgumentException e) {
      throw new SecretsUnreadable("the secrets file " + r.secretsFile().get() + " cannot be read on controller agent "
          + nodeId + " (" + e.getMessage() + "); every agent that may be the controller agent of " + r.pluginId()
          + " needs it at that path");
    }
  }

  private static final class SecretsUnreadable extends Exception {
    private static final long serialVersionUID = 1L;

    SecretsUnreadable(String message) {
      super(message);
    }
  }

  private void publish(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, Target t,
      List<ClusterClaim> cs, Optional<ClusterVolume> volume) {
    String csiNode = cs.stream().map(ClusterClaim::csiNodeId).filter(n -> !n.isEmpty()).findFirst().orElse("");
    String what = "ControllerPublishVolume of " + t.volumeId() + " to node " + t.nodeId();
    if (csiNode.isEmpty()) {
      fail(l, t, controller.name(), "", what + ": node " + t.nodeId() + "'s node plugin reported no node id");
      return;
    }
    ClusterClaim writer = cs.stream().filter(ClusterClaim::writer).findFirst().orElse(cs.get(0));
    boolean readOnly = cs.stream().allMatch(ClusterClaim::readOnly)
        && controller.fingerprint().controllerCapabilities().contains(CsiCapabilities.PUBLISH_READONLY);
    // As the claim uses it (CSI: the capability the CO intends to use the published volume with).
    VolumeCapability capability = capability(writer.access(), AccessMode.valueOf(writer.mode().name()));
    inFlight.add(what);
    try {
      Map<String, String> context = client.controllerPublishVolumeAsync(new ControllerPublishRequest(t.volumeId(),
              csiNode, capability, readOnly, Secrets.none(), volume.map(ClusterVolume::volumeContext).orElse(Map.of())))
          .get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
      publishes.incrementAndGet();
      if (volumes.putAttachment(l, new ClusterAttachment(controller.name(), t.volumeId(), t.nodeId(), csiNode,
          ClusterAttachment.State.ATTACHED, context, "", nodeId, clock.instant()))) {
        log.info("cluster controller: {} done: attached", what);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      Throwable cause = Futures.unwrap(e);
      Optional<StatusCode> code = CsiException.find(cause).filter(x -> x instanceof CsiStatusException)
          .map(x -> ((CsiStatusException) x).code());
      if (code.isEmpty() || UNCERTAIN.contains(code.get())) {
        lastError = what + ": " + cause.getMessage();
        log.info("cluster controller: {} uncertain ({}); sent again next round", what, cause.getMessage());
        return;
      }
      // NOT_FOUND (volume or node gone), FAILED_PRECONDITION (published to another node, single-node volume),
      // RESOURCE_EXHAUSTED (the node's attach limit), ALREADY_EXISTS (published incompatibly): final, said as is.
      fail(l, t, controller.name(), csiNode, what + " failed: " + code.get() + ": " + cause.getMessage());
    } finally {
      inFlight.remove(what);
    }
  }

  /** A block device, or a file system of the type asked for (mount flags are the node's, never sent here). */
  private static VolumeCapability capability(ClaimAccess access, AccessMode mode) {
    return access.block() ? VolumeCapability.block(mode) : VolumeCapability.mount(access.fsType(), List.of(), mode);
  }

  private void fail(ClusterVolumes.Leadership l, Target t, String plugin, String csiNode, String message) {
    lastError = message;
    log.warn("cluster controller: {}", message);
    volumes.putAttachment(l, new ClusterAttachment(plugin, t.volumeId(), t.nodeId(), csiNode,
        ClusterAttachment.State.FAILED, Map.of(), message, nodeId, clock.instant()));
  }

  /** Marks DETACHING (if no claim came back), unpublishes, deletes. False if not done this round. */
  private boolean unpublish(ClusterVolumes.Leadership l, CsiClient client, ClusterAttachment a, boolean fence) {
    if (a.state() != ClusterAttachment.State.DETACHING && !fence && !volumes.markDetaching(l, a)) {
      return false; // a claim came back: it stays attached
    }
    if (a.state() == ClusterAttachment.State.FAILED || a.csiNodeId().isEmpty()) {
      // Never published: nothing to undo.
      return volumes.deleteAttachment(l, a.pluginId(), a.volumeId(), a.nodeId(), fence);
    }
    String what = "ControllerUnpublishVolume of " + a.volumeId() + " from node " + a.nodeId();
    inFlight.add(what);
    try {
      client.controllerUnpublishVolumeAsync(a.volumeId(), a.csiNodeId(), Secrets.none())
          .get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (Exception e) {
      Throwable cause = Futures.unwrap(e);
      boolean notFound = CsiException.find(cause).filter(x -> x instanceof CsiStatusException)
          .map(x -> ((CsiStatusException) x).code() == StatusCode.NOT_FOUND).orElse(false);
      if (!notFound) {
        lastError = what + ": " + cause.getMessage();
        log.warn("cluster controller: {} failed ({}); tried again next round", what, cause.getMessage());
        return false;
      }
    } finally {
      inFlight.remove(what);
    }
    unpublishes.incrementAndGet();
    boolean done = volumes.deleteAttachment(l, a.pluginId(), a.volumeId(), a.nodeId(), fence);
    if (done) {
      log.info("cluster controller: {} done{}", what, fence ? " (the fence: the lost node's claims are released)" : "");
    }
    return done;
  }

  private void unpublishLost(ClusterVolumes.Leadership l, CsiClient client, ClusterAttachment a, int claims) {
    if (unpublish(l, client, a, true)) {
      fenced.addAndGet(claims);
    }
  }

  /** When this agent last saw each lost node with claims (for status). */
  public Map<String, Instant> lostNodes() {
    Map<String, Instant> out = new HashMap<>();
    long now = System.nanoTime();
    Instant wall = clock.instant();
    lostSince.forEach((n, since) -> out.put(n, wall.minusNanos(now - since)));
    return out;
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
    try {
      loop.awaitTermination(callTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
      provisioner.awaitTermination(callTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
