package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
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
  /** Where creates and deletes run, beside the rounds: a few at once, each request one at a time. */
  private final ExecutorService provisioner;
  /** Where attaches and detaches run: many volumes at once, each one call at a time. */
  private final ExecutorService attachers;
  private final VolumeAttacher attacher;
  private final RequestProvisioner requests;
  private final LeaderCalls calls;
  private final ControllerCounts counts = new ControllerCounts();
  private final RequestRetry retry;
  private volatile AutoCloseable hints; // the watch that wakes a round, once started
  private final AtomicBoolean roundQueued = new AtomicBoolean();
  private volatile boolean started;
  private volatile ControllerChecks checks; // health and capacity, once started (checkEvery)

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
    this.requests = new RequestProvisioner(volumes, nodeId, clock, calls, counts, retry, () -> secrets, this::client,
        provisioner, this::wakeAt);
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
    started = true;
    hints = volumes.watchChanges(this::wake);
    return this;
  }

  /** A round now, unless one is queued already. */
  private void wake() {
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
  }

  /**
   * A round at {@code at}: when a request is due again (a retry, a snapshot polled for readiness), so that it is not
   * sent up to a whole timer period after its backoff. Only once started.
   */
  private void wakeAt(Instant at) {
    if (!started) {
      return;
    }
    // Rounded up, plus 1 ms: a round woken a fraction of a millisecond early finds the request not due yet and it
    // would wait for the next timer tick (toMillis() rounds down: 8 of 10 retries missed their wake).
    long nanos = Duration.between(clock.instant(), at).toNanos();
    long delay = Math.max(0, (nanos + 999_999) / 1_000_000 + 1);
    try {
      loop.schedule(this::wake, delay, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closing) {
      // closing: nothing to wake
    }
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
    requests.provision(l, controller, s);
    ControllerChecks c = checks;
    if (c != null) {
      c.volumesSeen(l.pluginId(), s); // a create or delete done: capacity read again soon
    }
  }

  /** When this agent last saw each lost node with claims (for status). */
  public Map<String, Instant> lostNodes() {
    return attacher.lostNodes();
  }

  /**
   * Checks every plugin id led here every {@code every} on a thread of their own ({@link ControllerChecks}: health,
   * leaks, capacity); zero: no checks. Call once, before or after {@link #start}.
   *
   * @throws IllegalArgumentException if {@code every} is negative
   * @throws IllegalStateException if called twice
   */
  public ClusterController checkEvery(Duration every) {
    dev.csisupervisor.common.Bounds.notNegative(every, "every");
    if (checks != null) {
      throw new IllegalStateException("checks already started");
    }
    if (!every.isZero()) {
      checks = new ControllerChecks(volumes, registry, () -> Map.copyOf(leading), this::client, calls, attacher,
          counts, clock, nodeId).start(every);
    }
    return this;
  }

  /** Capacity of the plugin id read again soon (after a create or delete); nothing without checks. */
  public void capacitySoon(String pluginId) {
    ControllerChecks c = checks;
    if (c != null) {
      c.capacitySoon(pluginId);
    }
  }

  /**
   * What the checks did (for status and metrics): check rounds, keys written, attachments published again, and the
   * publications the plugins list that no attachment records (last check). Empty without checks.
   */
  public record CheckCounts(long rounds, long writes, long republished, int unrecordedPublications) {}

  public Optional<CheckCounts> checkCounts() {
    return checks().map(c -> {
      ControllerChecks.Counts n = c.counts();
      return new CheckCounts(n.rounds(), n.writes(), n.republished(), n.unrecordedPublications());
    });
  }

  /** What one check did: plugin ids checked, keys written to etcd (0 when nothing changed), plugin ids that failed. */
  public record CheckResult(int plugins, int writes, int failed) {}

  /**
   * One check of every plugin id led here now, on the checks' own thread (after a check under way there), beside the
   * interval's: for a benchmark or an operator's "check now". The future completes when the check is done.
   *
   * @throws IllegalStateException without checks ({@link #checkEvery} not called, or with zero)
   */
  public CompletableFuture<CheckResult> checkNow() {
    ControllerChecks c = checks().orElseThrow(() -> new IllegalStateException(
        "no checks: checkEvery was not called with a positive interval"));
    return c.checkNow().thenApply(r -> new CheckResult(r.plugins(), r.writes(), r.failed()));
  }

  /** The checks, if started (for tests: {@link ControllerChecks#checkNow}). */
  Optional<ControllerChecks> checks() {
    return Optional.ofNullable(checks);
  }

  @Override
  public void close() {
    ControllerChecks c = checks;
    if (c != null) {
      c.close();
    }
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
