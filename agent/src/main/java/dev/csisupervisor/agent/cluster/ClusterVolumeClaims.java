package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClaimAccess;
import dev.csisupervisor.catalog.ClaimRefusedException;
import dev.csisupervisor.catalog.ClaimRequest;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.PublisherStatus;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.common.ExponentialBackoff;
import dev.csisupervisor.registry.Fingerprint;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.ClusterClaims;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node side of cluster volumes: the {@link ClusterClaims} a {@link VolumeManager} calls, on etcd through the
 * agent's current {@link ClusterVolumes} (none while the agent is in no cluster: mounts go as on a lone node).
 *
 * <p><b>Claim.</b> Refused at once, with no etcd call, while the catalog publisher is not connected (a node cut
 * off from etcd takes no new claim; what it has mounted stays). Then the claim transaction; then, when a
 * controller plugin of the id in the catalog offers {@code PUBLISH_UNPUBLISH_VOLUME}, a wait for the attachment
 * the elected controller agent writes: {@code ATTACHED} gives the publish context, {@code FAILED} fails the
 * mount with the controller's error, and no attachment within the attach wait fails it naming the controller
 * agent (or its absence).
 *
 * <p><b>Release.</b> Once the manager has committed that the allocation is off the volume and, if it was the
 * volume's last use here, that the volume is unstaged (the manager says when: CSI's controller unpublish comes only
 * after every node unpublish and unstage). The release is of the claim as this node took it (its revision), so a
 * claim taken again meanwhile, by the same allocation, stays. A release etcd does not take now is kept and tried
 * again with backoff; and a sweep ({@link #sweep}, at start and every sweep interval) releases every claim of this
 * node that the volume manager's records (its journal) no longer hold, staging included, so a crash or restart
 * between the unmount and the release loses nothing: the journal says what is mounted, etcd follows it. The sweep
 * also removes this node's clean-stop marker: it runs again.
 *
 * <p>Thread-safe. etcd calls run on this object's own threads, never the caller's.
 */
public final class ClusterVolumeClaims implements ClusterClaims, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ClusterVolumeClaims.class);
  /** The longest pause between two reads of an awaited attachment (one etcd read per waiting mount at most). */
  static final long ATTACH_POLL_MAX_MS = 200;

  /** The cluster as the agent is in it now. */
  public record Membership(ClusterVolumes volumes, String nodeId, Supplier<PublisherStatus> status) {
    public Membership {
      Objects.requireNonNull(volumes, "volumes");
      Objects.requireNonNull(nodeId, "nodeId");
      Objects.requireNonNull(status, "status");
    }
  }

  private record Held(String pluginId, String volumeId, String allocId) {}

  private final Supplier<Optional<Membership>> cluster;
  private final PluginRegistry registry;
  private final ScheduledExecutorService scheduler;
  private final Duration attachWait;
  private final ExecutorService io;
  private final Backoff releaseBackoff;
  private volatile VolumeManager manager;
  /** Claims being acquired, or acquired and not yet in a record: a sweep leaves them. */
  private final Set<Held> acquiring = ConcurrentHashMap.newKeySet();
  /** Releases etcd has not taken yet, each of the claim as this node last took it (revision 0: not known here). */
  private final Map<Held, Optional<ClusterClaim>> pendingReleases = new ConcurrentHashMap<>();
  /** Mounts whose claim the last sweep did not find in etcd: fenced if the next one does not either. */
  private final Set<Held> claimMissing = ConcurrentHashMap.newKeySet();
  /** The claims as this node last took them (with their revision): what a release means. */
  private final Map<Held, ClusterClaim> taken = new ConcurrentHashMap<>();
  private volatile boolean releaseScheduled;
  private volatile boolean closed;

  /**
   * @param cluster the membership now (empty: no cluster)
   * @param attachWait how long a claim waits for its attachment
   * @param sweepEvery how often claims of this node that no record holds are released (and pending releases
   *     tried again); zero: only at {@link #sweep} calls
   */
  public ClusterVolumeClaims(Supplier<Optional<Membership>> cluster, PluginRegistry registry,
      ScheduledExecutorService scheduler, Duration attachWait, Duration sweepEvery) {
    this.cluster = Objects.requireNonNull(cluster, "cluster");
    this.registry = Objects.requireNonNull(registry, "registry");
    this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
    this.attachWait = Objects.requireNonNull(attachWait, "attachWait");
    this.releaseBackoff = ExponentialBackoff.doubling(Duration.ofMillis(200), Duration.ofSeconds(10), new Random());
    this.io = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "cluster-claims");
      t.setDaemon(true);
      return t;
    });
    if (!sweepEvery.isZero()) {
      // The first soon after start (the records are restored by then): a claim a crash left goes, and this node's
      // clean-stop marker with it, without waiting a whole interval.
      scheduler.scheduleWithFixedDelay(() -> io.execute(this::sweepQuietly), Math.min(1000, sweepEvery.toMillis()),
          sweepEvery.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  /** The manager whose records say what this node holds (set once it is built: it is built with this object). */
  public void bind(VolumeManager manager) {
    this.manager = Objects.requireNonNull(manager, "manager");
  }

  @Override
  public CompletableFuture<Optional<Map<String, String>>> acquire(VolumeClaim claim) {
    Optional<Membership> m = cluster.get();
    if (m.isEmpty()) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    Membership c = m.get();
    PublisherStatus status = c.status().get();
    Held held = new Held(claim.pluginId(), claim.volumeId(), claim.allocId());
    if (!status.connected()) {
      return CompletableFuture.failedFuture(new CompletionException(new ClaimRefusedException(
          ClaimRefusedException.Reason.ETCD_UNAVAILABLE, "etcd cannot be reached now (" + (status.lastError().isBlank()
              ? "not connected to " + status.endpoint() + " yet, no error so far" : status.lastError())
              + "): new cluster claims are refused until it is back; volumes mounted here stay mounted", null, null)));
    }
    acquiring.add(held);
    // A release of this allocation's claim still waiting for etcd is dropped: the claim is wanted again. (One already
    // on its way is conditional on the claim as it was, and the claim taken now has a newer revision.)
    pendingReleases.remove(held);
    return CompletableFuture.supplyAsync(() -> claim(c, claim, held), io)
        .thenCompose(granted -> granted.publishes()
            ? awaitAttached(c, claim, granted.claim(), System.nanoTime() + attachWait.toNanos(), 50)
                .thenApply(Optional::of)
                // Taken but never attached (failed, or not within the wait): nothing was done here, the claim goes.
                .whenComplete((x, e) -> {
                  if (e != null) {
                    released(claim.pluginId(), claim.volumeId(), claim.allocId());
                  }
                })
            : CompletableFuture.completedFuture(Optional.of(Map.<String, String>of())))
        .whenComplete((x, e) -> {
          if (e != null) {
            acquiring.remove(held);
          }
        });
  }

  private record Granted(ClusterClaim claim, boolean publishes) {}

  /** Step 1: the claim transaction; whether the plugin's controller publishes (then an attachment is awaited). */
  private Granted claim(Membership c, VolumeClaim claim, Held held) {
    Optional<Fingerprint> node = registry.find(PluginType.CSI_NODE, claim.pluginId()).map(PluginInfo::fingerprint);
    ClaimRequest request = new ClaimRequest(claim.pluginId(), claim.volumeId(), c.nodeId(), claim.allocId(),
        VolumeAccessMode.valueOf(claim.capability().accessMode().name()), claim.readOnly(),
        node.map(Fingerprint::nodeId).orElse(""), node.map(Fingerprint::accessibleTopology).orElse(Map.of()),
        claim.capability().accessType() == VolumeCapability.AccessType.BLOCK ? ClaimAccess.BLOCK
            : ClaimAccess.mount(claim.capability().fsType()));
    try {
      ClusterClaim granted = c.volumes().claim(request);
      taken.put(held, granted);
      return new Granted(granted, c.volumes().controllerPublishes(claim.pluginId()));
    } catch (ClaimRefusedException e) {
      throw new CompletionException(e);
    } catch (EtcdException e) {
      // If the claim landed all the same, no record holds it: the sweep releases it.
      throw new CompletionException(unreachable(e));
    }
  }

  private static ClaimRefusedException unreachable(EtcdException e) {
    return new ClaimRefusedException(ClaimRefusedException.Reason.ETCD_UNAVAILABLE,
        "etcd did not answer the claim (" + e.getMessage() + "): refused; volumes mounted here stay mounted", null, e);
  }

  /**
   * Step 2: the elected controller agent's attachment of the volume to this node, read again after a pause that
   * doubles from 50 ms to {@value #ATTACH_POLL_MAX_MS} ms (a timer on the scheduler, the read on this object's
   * threads). The controller starts the attach as soon as the claim lands (its watch), so the attachment usually
   * comes within the attach's own time; with pauses up to 1 s a mount waited up to a second more after it.
   */
  private CompletableFuture<Map<String, String>> awaitAttached(Membership c, VolumeClaim claim, ClusterClaim mine,
      long deadline, long pauseMillis) {
    Optional<ClusterAttachment> a = Optional.empty();
    EtcdException unanswered = null;
    try {
      a = c.volumes().attachment(claim.pluginId(), claim.volumeId(), c.nodeId());
    } catch (EtcdException e) {
      unanswered = e; // the claim stands: read again until the wait is over (an etcd member may be failing over)
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e); // an attachment value that does not read: said, never waited on
    }
    if (a.isPresent() && a.get().state() == ClusterAttachment.State.ATTACHED) {
      return CompletableFuture.completedFuture(a.get().publishContext());
    }
    // A FAILED attachment written before this claim is an earlier claim's answer: the controller agent clears it
    // (through an unpublish) and publishes again for this one.
    if (a.isPresent() && a.get().state() == ClusterAttachment.State.FAILED && a.get().revision() > mine.revision()) {
      return CompletableFuture.failedFuture(new IllegalStateException("the controller agent "
          + a.get().controllerNodeId() + " could not attach " + claim.volumeId() + " to node " + c.nodeId() + ": "
          + a.get().message()));
    }
    if (System.nanoTime() > deadline || closed) {
      if (unanswered != null) {
        return CompletableFuture.failedFuture(unreachable(unanswered));
      }
      String controller;
      try {
        controller = c.volumes().read().controllers().get(claim.pluginId());
      } catch (RuntimeException e) {
        return CompletableFuture.failedFuture(e);
      }
      Optional<ClusterAttachment> seen = a;
      return CompletableFuture.failedFuture(new IllegalStateException("no attachment of " + claim.volumeId()
          + " to node " + c.nodeId() + " within " + attachWait.toMillis() + " ms: " + (controller == null
              ? "no agent with a healthy controller of plugin " + claim.pluginId() + " is elected"
              : "the controller agent " + controller + " has not published it ("
                  + seen.map(x -> x.state().name() + (x.message().isEmpty() ? "" : ": " + x.message()))
                      .orElse("no attachment yet") + ")")));
    }
    CompletableFuture<Map<String, String>> next = new CompletableFuture<>();
    scheduler.schedule(() -> {
      try {
        io.execute(() -> awaitAttached(c, claim, mine, deadline, Math.min(ATTACH_POLL_MAX_MS, pauseMillis * 2))
            .whenComplete((v, e) -> {
          if (e != null) {
            next.completeExceptionally(e);
          } else {
            next.complete(v);
          }
        }));
      } catch (java.util.concurrent.RejectedExecutionException e) {
        next.completeExceptionally(new IllegalStateException("closing: no attachment awaited any more"));
      }
    }, pauseMillis, TimeUnit.MILLISECONDS);
    return next;
  }

  /**
   * Whether this node's claim of the volume for the allocation still stands (read now); true for a volume the cluster
   * does not know, with no cluster, or when etcd cannot say.
   */
  @Override
  public CompletableFuture<Boolean> stillClaimed(String pluginId, String volumeId, String allocId) {
    Optional<Membership> m = cluster.get();
    if (m.isEmpty()) {
      return CompletableFuture.completedFuture(true);
    }
    try {
      return CompletableFuture.supplyAsync(() -> {
        try {
          return m.get().volumes().volume(pluginId, volumeId).isEmpty() || m.get().volumes()
              .claims(pluginId, volumeId).stream().anyMatch(c -> c.nodeId().equals(m.get().nodeId())
                  && c.allocId().equals(allocId));
        } catch (RuntimeException e) {
          log.info("cluster: whether the claim of {}/{} for alloc {} stands cannot be told now ({}): kept", pluginId,
              volumeId, allocId, e.getMessage());
          return true;
        }
      }, io);
    } catch (java.util.concurrent.RejectedExecutionException closing) {
      return CompletableFuture.completedFuture(true);
    }
  }

  @Override
  public void released(String pluginId, String volumeId, String allocId) {
    Held h = new Held(pluginId, volumeId, allocId);
    acquiring.remove(h);
    if (cluster.get().isEmpty()) {
      return;
    }
    pendingReleases.put(h, Optional.ofNullable(taken.remove(h)));
    try {
      io.execute(this::drainReleases);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closing: the next start's sweep releases it
    }
  }

  private void drainReleases() {
    Optional<Membership> m = cluster.get();
    if (m.isEmpty() || closed) {
      return;
    }
    for (Map.Entry<Held, Optional<ClusterClaim>> e : List.copyOf(pendingReleases.entrySet())) {
      Held h = e.getKey();
      try {
        if (e.getValue().isPresent()) {
          m.get().volumes().release(e.getValue().get());
        } else {
          // Taken before this agent started (its revision is not known here): as it stands now.
          m.get().volumes().release(h.pluginId(), h.volumeId(), m.get().nodeId(), h.allocId());
        }
        pendingReleases.remove(h, e.getValue());
      } catch (EtcdException x) {
        scheduleReleaseRetry(x);
        return;
      }
    }
    releaseBackoff.reset();
  }

  private synchronized void scheduleReleaseRetry(EtcdException e) {
    if (releaseScheduled || closed) {
      return;
    }
    releaseScheduled = true;
    Duration delay = releaseBackoff.next();
    log.warn("cluster: {} claim release(s) wait for etcd ({}); trying again in {} ms", pendingReleases.size(),
        e.getMessage(), delay.toMillis());
    scheduler.schedule(() -> {
      releaseScheduled = false;
      io.execute(this::drainReleases);
    }, delay.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Releases still waiting for etcd. */
  public int pendingReleases() {
    return pendingReleases.size();
  }

  /**
   * Releases every claim of this node in etcd that the volume manager's records do not hold (the allocation was
   * unmounted, and the release was lost to a crash or an outage), and tries pending releases again.
   *
   * @return the claims released
   * @throws EtcdException if etcd cannot be read
   */
  public List<ClusterClaim> sweep() {
    Optional<Membership> m = cluster.get();
    VolumeManager vm = manager;
    if (m.isEmpty() || vm == null) {
      return List.of();
    }
    m.get().volumes().clearStopped();
    Set<Held> local = new HashSet<>();
    // A volume still staged here with no allocation left (its unstage pending) keeps every claim of it on this node:
    // the controller's unpublish must come after the unstage (CSI).
    Set<List<String>> staged = new HashSet<>();
    for (VolumeRecord r : vm.list()) {
      for (String alloc : r.allocs()) {
        local.add(new Held(r.pluginId(), r.volumeId(), alloc));
      }
      if (r.allocs().isEmpty() && r.onNode()) {
        staged.add(List.of(r.pluginId(), r.volumeId()));
      }
    }
    acquiring.removeAll(local); // mounted: the record holds them now
    List<ClusterClaim> gone = new java.util.ArrayList<>();
    List<ClusterClaim> ofNode = m.get().volumes().claimsOfNode(m.get().nodeId());
    fenceMountsWithoutClaims(m.get(), vm, ofNode);
    for (ClusterClaim c : ofNode) {
      Held h = new Held(c.pluginId(), c.volumeId(), c.allocId());
      if (!local.contains(h) && !acquiring.contains(h) && !staged.contains(List.of(c.pluginId(), c.volumeId()))) {
        // As read: a claim taken again meanwhile (a new revision) stays.
        if (m.get().volumes().release(c)) {
          log.info("cluster: released the claim of {}/{} for alloc {}: no volume record here holds it", c.pluginId(),
              c.volumeId(), c.allocId());
          taken.remove(h, c);
          gone.add(c);
        }
      }
    }
    drainReleases();
    return gone;
  }

  /**
   * A mount this node's journal holds whose cluster claim is gone (fenced by the controller agent past
   * {@code detach_after}, or forced by an operator) is not this node's any more: its disk may be attached elsewhere.
   * It is unmounted, never done again, and said as FENCED. Only a mount of a volume registered in the cluster, found
   * without its claim by two sweeps in a row (a claim being taken or released between two reads is never taken for
   * a fenced one).
   */
  private void fenceMountsWithoutClaims(Membership m, VolumeManager vm, List<ClusterClaim> ofNode) {
    Set<Held> claimed = new HashSet<>();
    ofNode.forEach(c -> claimed.add(new Held(c.pluginId(), c.volumeId(), c.allocId())));
    Set<Held> missing = new HashSet<>();
    for (VolumeRecord r : vm.list()) {
      for (String alloc : r.allocs()) {
        Held h = new Held(r.pluginId(), r.volumeId(), alloc);
        boolean published = r.usageOf(alloc).map(u -> u.allocs().get(alloc) == VolumeRecord.AllocPhase.PUBLISHED
            || u.allocs().get(alloc) == VolumeRecord.AllocPhase.LOST).orElse(false);
        if (published && !claimed.contains(h) && !acquiring.contains(h)
            && m.volumes().volume(r.pluginId(), r.volumeId()).isPresent()) {
          missing.add(h);
        }
      }
    }
    claimMissing.retainAll(missing);
    for (Held h : missing) {
      if (!claimMissing.add(h)) {
        claimMissing.remove(h);
        log.warn("FENCED: the cluster claim of {}/{} for alloc {} on node {} is gone (fenced past detach_after, or "
            + "forced by an operator): the volume is unmounted here and not mounted again", h.pluginId(),
            h.volumeId(), h.allocId(), m.nodeId());
        vm.unmount(dev.csisupervisor.volumes.UnmountRequest.of(h.pluginId(), h.volumeId(), h.allocId()))
            .whenComplete((x, e) -> {
              if (e != null) {
                log.warn("FENCED: the unmount of {}/{} for alloc {} is pending: {}", h.pluginId(), h.volumeId(),
                    h.allocId(), e.getMessage());
              }
            });
      }
    }
  }

  private void sweepQuietly() {
    try {
      sweep();
    } catch (EtcdException e) {
      log.debug("cluster: claim sweep deferred: {}", e.getMessage());
    } catch (RuntimeException e) {
      log.warn("cluster: claim sweep failed", e);
    }
  }

  @Override
  public void close() {
    closed = true;
    io.shutdownNow();
  }
}
