package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClaimAccess;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterAttachment.State;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.ControllerPublishRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.agent.cluster.LeaderCalls.CallFailed;
import dev.csisupervisor.agent.cluster.LeaderCalls.NotLeading;
import dev.csisupervisor.registry.PluginInfo;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The attachments of one controller agent: per volume, what its claims want made true in the cloud, in the spec's
 * order (DESIGN.md "Cluster volumes"), one volume's calls one at a time and different volumes at once:
 * <ol>
 *   <li>an attachment whose node has no claim left, a {@code DETACHING} one, or a {@code FAILED} one that a newer
 *       claim asks again: ControllerUnpublishVolume (NOT_FOUND: done), then the key deleted; a failed unpublish
 *       keeps the key and is tried again with backoff;</li>
 *   <li>with {@code detach_after}: the claims of a lost node (lease expired, not stopped cleanly) past it are fenced:
 *       DETACHING, the unpublish, then claims and attachment deleted in one transaction that checks the node is
 *       still lost and took no claim since;</li>
 *   <li>a (volume, node) with claims and no attachment: the intent {@code ATTACHING} first, then
 *       ControllerPublishVolume, then {@code ATTACHED}; an uncertain answer (or none) keeps {@code ATTACHING} and
 *       sends it again with backoff; a final one is {@code FAILED} in the plugin's words. A single-node volume waits
 *       while any other node has an attachment in any state.</li>
 * </ol>
 * Every write is conditional on the election and on the attachment being as read; every call ends before the
 * election lease could expire, and losing the lease cancels the calls in flight ({@link LeaderCalls}). Thread-safe.
 */
final class VolumeAttacher {
  private static final Logger log = LoggerFactory.getLogger(VolumeAttacher.class);
  private final ClusterVolumes volumes;
  private final String nodeId;
  private final Optional<Duration> detachAfter;
  private final Clock clock;
  private final ClusterController.RequestRetry retry;
  private final ExecutorService pool;
  private final ControllerCounts counts;
  /** Volumes whose work is under way ("plugin/volume"): a round leaves them to it. */
  private final Set<String> busy = ConcurrentHashMap.newKeySet();
  private final LeaderCalls calls;
  /** Per lost node, when this agent first saw it lost (on the injected clock). */
  private final Map<String, Instant> lostSince = new ConcurrentHashMap<>();

  VolumeAttacher(ClusterVolumes volumes, String nodeId, LeaderCalls calls, Optional<Duration> detachAfter,
      Clock clock, ClusterController.RequestRetry retry, ExecutorService pool, ControllerCounts counts) {
    this.volumes = volumes;
    this.nodeId = nodeId;
    this.calls = calls;
    this.detachAfter = detachAfter;
    this.clock = clock;
    this.retry = retry;
    this.pool = pool;
    this.counts = counts;
  }

  /** When this agent first saw each lost node that still has claims. */
  Map<String, Instant> lostNodes() {
    return Map.copyOf(lostSince);
  }

  /** One volume's claims and attachments, by node, as one snapshot read them. */
  private record VolumeState(String pluginId, String volumeId, Map<String, List<ClusterClaim>> claims,
      Map<String, ClusterAttachment> attachments, Optional<ClusterVolume> volume, long revision) {}

  /**
   * Starts the work each volume of the plugin id needs, on the pool (a volume whose work is still under way is left
   * to it). Returns at once.
   */
  void reconcile(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, VolumesSnapshot s) {
    String plugin = controller.name();
    Map<String, VolumeState> byVolume = new TreeMap<>();
    for (ClusterClaim c : s.claims()) {
      if (c.pluginId().equals(plugin)) {
        state(byVolume, s, plugin, c.volumeId()).claims().computeIfAbsent(c.nodeId(), n -> new ArrayList<>()).add(c);
      }
    }
    for (ClusterAttachment a : s.attachments()) {
      if (a.pluginId().equals(plugin)) {
        state(byVolume, s, plugin, a.volumeId()).attachments().put(a.nodeId(), a);
      }
    }
    Set<String> lostWithClaims = new java.util.HashSet<>();
    for (VolumeState v : byVolume.values()) {
      v.claims().keySet().stream().filter(s::lost).forEach(lostWithClaims::add);
    }
    Instant now = clock.instant();
    lostSince.keySet().retainAll(lostWithClaims);
    lostWithClaims.forEach(n -> lostSince.putIfAbsent(n, now));
    for (VolumeState v : byVolume.values()) {
      String key = plugin + "/" + v.volumeId();
      if (!needsWork(v, s, now) || !busy.add(key)) {
        continue;
      }
      try {
        pool.execute(() -> {
          try {
            work(l, controller, client, v, s);
          } catch (EtcdException e) {
            counts.error(v.volumeId() + ": " + e.getMessage());
            log.debug("cluster controller: {} deferred: {}", key, e.getMessage());
          } catch (RuntimeException e) {
            counts.error(e.toString());
            log.warn("cluster controller: work on {} failed", key, e);
          } finally {
            busy.remove(key);
          }
        });
      } catch (RejectedExecutionException closing) {
        busy.remove(key);
        return;
      }
    }
  }

  private static VolumeState state(Map<String, VolumeState> byVolume, VolumesSnapshot s, String plugin, String vol) {
    return byVolume.computeIfAbsent(vol, v -> new VolumeState(plugin, v, new TreeMap<>(), new TreeMap<>(),
        s.volumes().stream().filter(x -> x.pluginId().equals(plugin) && x.volumeId().equals(v)).findFirst(),
        s.revision()));
  }

  /** Whether anything is to be done for the volume now (most rounds find nothing, and start no task). */
  private boolean needsWork(VolumeState v, VolumesSnapshot s, Instant now) {
    for (Map.Entry<String, ClusterAttachment> e : v.attachments().entrySet()) {
      ClusterAttachment a = e.getValue();
      boolean claimed = v.claims().containsKey(e.getKey())
          || s.unreadableClaim(v.pluginId(), v.volumeId(), e.getKey());
      if (a.state() != State.ATTACHED && a.state() != State.FAILED) {
        if (a.due(now) && !(claimed && (s.lost(e.getKey()) || ordered(s, v, e.getKey())))) {
          return true; // an intent to send (again), a detach to finish (a lost node's waits for its fence)
        }
        continue;
      }
      if (!claimed || a.state() == State.FAILED && newerClaim(v, e.getKey(), a)) {
        return true;
      }
    }
    for (String node : v.claims().keySet()) {
      if (!v.attachments().containsKey(node) && !s.lost(node)) {
        return true;
      }
      if (s.lost(node) && fenceDue(node, now) || ordered(s, v, node)) {
        return true;
      }
    }
    return false;
  }

  /** An operator ordered the node, gone, detached from this volume ({@link dev.csisupervisor.catalog.DetachOrder}). */
  private static boolean ordered(VolumesSnapshot s, VolumeState v, String node) {
    return s.detachOrdered(node, v.pluginId(), v.volumeId());
  }

  private boolean fenceDue(String node, Instant now) {
    Instant since = lostSince.get(node);
    return detachAfter.isPresent() && since != null && !now.isBefore(since.plus(detachAfter.get()));
  }

  /** A claim of the node newer than the attachment: asked again after it was written. */
  private static boolean newerClaim(VolumeState v, String node, ClusterAttachment a) {
    return v.claims().getOrDefault(node, List.of()).stream().anyMatch(c -> c.revision() > a.revision());
  }

  /** One volume's steps, in order, on a pool thread. */
  private void work(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, VolumeState v,
      VolumesSnapshot s) {
    Instant now = clock.instant();
    Map<String, ClusterAttachment> attachments = new HashMap<>(v.attachments());
    // Step 1: unpublish what no claim needs (and clear a failed publish a newer claim asks again). First, so that a
    // single-node volume handed from one node to another is detached from the first before it is attached to the
    // second.
    for (Map.Entry<String, ClusterAttachment> e : v.attachments().entrySet()) {
      String node = e.getKey();
      ClusterAttachment a = e.getValue();
      // An unreadable claim of the node still holds it there: never detached on a guess.
      boolean claimed = v.claims().containsKey(node) || s.unreadableClaim(v.pluginId(), v.volumeId(), node);
      if (claimed && (s.lost(node) || ordered(s, v, node))) {
        continue; // a lost (or ordered) node's attachment goes only through the fence (step 2)
      }
      Optional<ClusterAttachment> detaching;
      if (!claimed && a.state() != State.DETACHING) {
        detaching = volumes.markDetaching(l, a);
      } else if (claimed && a.state() == State.FAILED && newerClaim(v, node, a)) {
        detaching = volumes.updateAttachment(l, a, a.next(State.DETACHING, a.publishContext(),
            "clearing a failed ControllerPublishVolume before it is sent again", nodeId, now, Optional.empty()));
      } else if (a.state() == State.DETACHING) {
        detaching = Optional.of(a);
      } else {
        continue;
      }
      if (detaching.isEmpty() || !detaching.get().due(now)) {
        continue;
      }
      if (unpublish(l, client, detaching.get(), false).isPresent()) {
        attachments.remove(node);
      }
    }
    // Step 2: lost nodes past detach_after, and gone nodes an operator ordered detached, fenced by the unpublish,
    // then their claims go.
    for (String node : v.claims().keySet()) {
      boolean ordered = ordered(s, v, node);
      if (ordered || s.lost(node) && fenceDue(node, now)) {
        fence(l, client, v, node, Optional.ofNullable(attachments.get(node)), ordered);
        attachments.remove(node);
      }
    }
    // Step 3: publish what the claims need. A single-node claim waits while the volume has an attachment to another
    // node in any state (a FAILED or ATTACHING one may hold the disk in the cloud): never a second attachment of a
    // single-node disk tried, as the kubelet's attach/detach controller waits on a multi-attach.
    for (Map.Entry<String, List<ClusterClaim>> e : v.claims().entrySet()) {
      String node = e.getKey();
      ClusterAttachment a = attachments.get(node);
      if (s.lost(node) || a != null && a.state() != State.ATTACHING) {
        continue;
      }
      Optional<String> elsewhere = java.util.stream.Stream.concat(attachments.keySet().stream(),
              s.unreadableAttachments(v.pluginId(), v.volumeId()).stream()) // an unreadable one holds the disk too
          .filter(n -> !n.equals(node)).findFirst();
      if (elsewhere.isPresent() && e.getValue().stream().anyMatch(c -> !c.mode().multiNode())) {
        log.debug("cluster controller: {} to node {} waits: still attached to node {}", v.volumeId(), node,
            elsewhere.get());
        continue;
      }
      publish(l, controller, client, v, node, e.getValue(), Optional.ofNullable(a), now)
          .ifPresent(x -> attachments.put(node, x));
    }
  }

  /**
   * The intent (or the attempt after an uncertain one), ControllerPublishVolume, and its outcome written.
   *
   * @return the attachment as left
   */
  private Optional<ClusterAttachment> publish(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client,
      VolumeState v, String node, List<ClusterClaim> cs, Optional<ClusterAttachment> existing, Instant now) {
    String csiNode = cs.stream().map(ClusterClaim::csiNodeId).filter(n -> !n.isEmpty()).findFirst().orElse("");
    String plugin = controller.name();
    String what = "ControllerPublishVolume of " + v.volumeId() + " to node " + node;
    // Step 1: the intent, before the call (or the attempt, once it is due again).
    ClusterAttachment sent;
    if (existing.isEmpty()) {
      Optional<ClusterAttachment> intent = volumes.intendAttach(l, new ClusterAttachment(plugin, v.volumeId(), node,
          csiNode, State.ATTACHING, Map.of(), "", nodeId, now, 1, Optional.empty(), 0));
      if (intent.isEmpty()) {
        return Optional.empty(); // no longer ours, the claims went, or written meanwhile: the next round reads it
      }
      sent = intent.get();
    } else {
      if (!existing.get().due(now)) {
        return existing;
      }
      Optional<ClusterAttachment> again = volumes.updateAttachment(l, existing.get(),
          existing.get().attempted().next(State.ATTACHING, Map.of(), existing.get().message(), nodeId, now,
              Optional.empty()));
      if (again.isEmpty()) {
        return Optional.empty();
      }
      sent = again.get();
    }
    if (csiNode.isEmpty()) {
      return volumes.updateAttachment(l, sent, sent.next(State.FAILED, Map.of(),
          what + ": node " + node + "'s node plugin reported no node id", nodeId, now, Optional.empty()));
    }
    ControllerPublishRequest request = publishRequest(controller, v.volumeId(), csiNode, cs, v.volume());
    // Step 2: the call, ended before the election lease could expire.
    Map<String, String> context;
    try {
      context = call(l, what, () -> client.controllerPublishVolumeAsync(request));
    } catch (NotLeading e) {
      return Optional.of(sent); // the intent stays: the successor sends it again
    } catch (CallFailed e) {
      if (CsiOutcome.uncertain(e.getCause())) {
        Instant next = clock.instant().plus(retry.after(sent.attempts()));
        log.info("cluster controller: {} uncertain ({}); sent again at {}", what, e.getMessage(), next);
        counts.error(what + ": " + e.getMessage());
        return volumes.updateAttachment(l, sent, sent.next(State.ATTACHING, Map.of(), what + ": " + e.getMessage(),
            nodeId, clock.instant(), Optional.of(next)));
      }
      // NOT_FOUND (volume or node gone), FAILED_PRECONDITION (published to another node, single-node volume),
      // RESOURCE_EXHAUSTED (the node's attach limit), ALREADY_EXISTS (published incompatibly): final, said as is.
      String said = what + " failed: " + CsiOutcome.code(e.getCause()).map(c -> c + ": ").orElse("")
          + e.getMessage();
      counts.error(said);
      log.warn("cluster controller: {}", said);
      return volumes.updateAttachment(l, sent, sent.next(State.FAILED, Map.of(), said, nodeId, clock.instant(),
          Optional.empty()));
    }
    counts.published();
    // Step 3: the outcome. An etcd failure here is not an uncertain publish: the intent stays, and the next round
    // sends the (idempotent) call again.
    Optional<ClusterAttachment> attached = volumes.updateAttachment(l, sent, sent.next(State.ATTACHED, context, "",
        nodeId, clock.instant(), Optional.empty()));
    if (attached.isPresent()) {
      log.info("cluster controller: {} done: attached", what);
    }
    return attached;
  }

  /**
   * What ControllerPublishVolume is sent for the node's claims {@code cs} of the volume: the writer's capability (CSI:
   * the capability the CO intends to use the published volume with), read-only only if every claim is and the
   * plugin offers PUBLISH_READONLY, the volume's context.
   */
  private static ControllerPublishRequest publishRequest(PluginInfo controller, String volumeId, String csiNode,
      List<ClusterClaim> cs, Optional<ClusterVolume> volume) {
    ClusterClaim writer = cs.stream().filter(ClusterClaim::writer).findFirst().orElse(cs.get(0));
    boolean readOnly = cs.stream().allMatch(ClusterClaim::readOnly)
        && controller.fingerprint().controllerCapabilities().contains(CsiCapabilities.PUBLISH_READONLY);
    VolumeCapability capability = capability(writer.access(), AccessMode.valueOf(writer.mode().name()));
    return new ControllerPublishRequest(volumeId, csiNode, capability, readOnly, Secrets.none(),
        volume.map(ClusterVolume::volumeContext).orElse(Map.of()));
  }

  /**
   * An ATTACHED attachment the plugin no longer lists as published to its node ({@code LIST_VOLUMES_PUBLISHED_NODES},
   * seen by {@link ControllerChecks}): ControllerPublishVolume sent again with the arguments the attach used
   * (idempotent in CSI), unless the volume's work is under way here, the attachment changed since {@code a} was read
   * (a detach began: nothing is published again) or the node no longer claims it. A new publish context is written.
   * On the caller's thread.
   *
   * @return whether the call was sent and succeeded
   * @throws NotLeading if the election is not sure to be held
   * @throws CallFailed with the plugin's failure
   */
  boolean publishAgain(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, ClusterAttachment a,
      VolumesSnapshot s) throws NotLeading, CallFailed {
    String key = a.pluginId() + "/" + a.volumeId();
    if (a.state() != State.ATTACHED || a.csiNodeId().isEmpty() || !busy.add(key)) {
      return false;
    }
    try {
      Optional<ClusterAttachment> now = volumes.attachment(a.pluginId(), a.volumeId(), a.nodeId());
      List<ClusterClaim> cs = s.claimsOf(a.pluginId(), a.volumeId()).stream()
          .filter(c -> c.nodeId().equals(a.nodeId())).toList();
      if (now.isEmpty() || now.get().revision() != a.revision() || now.get().state() != State.ATTACHED
          || cs.isEmpty()) {
        return false;
      }
      String what = "ControllerPublishVolume (again: the plugin lost it) of " + a.volumeId() + " to node "
          + a.nodeId();
      ControllerPublishRequest request = publishRequest(controller, a.volumeId(), a.csiNodeId(), cs,
          s.volumes().stream().filter(v -> v.pluginId().equals(a.pluginId()) && v.volumeId().equals(a.volumeId()))
              .findFirst());
      Map<String, String> context = call(l, what, () -> client.controllerPublishVolumeAsync(request));
      counts.published();
      log.warn("cluster controller: {} done", what);
      if (!context.equals(now.get().publishContext())) {
        volumes.updateAttachment(l, now.get(), now.get().next(State.ATTACHED, context, "", nodeId, clock.instant(),
            Optional.empty()));
      }
      return true;
    } finally {
      busy.remove(key);
    }
  }

  /** A block device, or a file system of the type asked for (mount flags are the node's, never sent here). */
  static VolumeCapability capability(ClaimAccess access, AccessMode mode) {
    return access.block() ? VolumeCapability.block(mode) : VolumeCapability.mount(access.fsType(), List.of(), mode);
  }

  /**
   * ControllerUnpublishVolume of a DETACHING attachment, then its key deleted (with {@code fence}, the caller
   * deletes it with the claims); a failure keeps it, with the next attempt's time.
   *
   * @return the attachment as unpublished, if it was
   */
  private Optional<ClusterAttachment> unpublish(ClusterVolumes.Leadership l, CsiClient client, ClusterAttachment a,
      boolean fence) {
    String what = "ControllerUnpublishVolume of " + a.volumeId() + " from node " + a.nodeId();
    if (!a.csiNodeId().isEmpty()) { // else never sent: nothing to undo
      try {
        call(l, what, () -> client.controllerUnpublishVolumeAsync(a.volumeId(), a.csiNodeId(), Secrets.none()));
      } catch (NotLeading e) {
        return Optional.empty();
      } catch (CallFailed e) {
        if (!CsiOutcome.notFound(e.getCause())) {
          Instant next = clock.instant().plus(retry.after(a.attempts() + 1));
          String said = what + " failed: " + e.getMessage();
          counts.error(said);
          log.warn("cluster controller: {}; tried again at {}", said, next);
          volumes.updateAttachment(l, a, a.attempted().next(a.state(), a.publishContext(), said, nodeId,
              clock.instant(), Optional.of(next)));
          return Optional.empty();
        }
      }
      counts.unpublished();
    }
    if (fence) {
      return Optional.of(a);
    }
    if (volumes.deleteAttachment(l, a)) {
      log.info("cluster controller: {} done", what);
      return Optional.of(a);
    }
    return Optional.empty();
  }

  private void fence(ClusterVolumes.Leadership l, CsiClient client, VolumeState v, String node,
      Optional<ClusterAttachment> a, boolean ordered) {
    int claims = v.claims().get(node).size();
    if (a.isPresent()) {
      Optional<ClusterAttachment> detaching = a.get().state() == State.DETACHING ? a
          : volumes.beginFence(l, a.get(), ordered);
      if (detaching.isEmpty() || !detaching.get().due(clock.instant())
          || unpublish(l, client, detaching.get(), true).isEmpty()) {
        return;
      }
      a = detaching;
    }
    if (volumes.completeFence(l, v.pluginId(), v.volumeId(), node, a, v.revision(), ordered)) {
      counts.fenced(claims);
    }
  }

  private <T> T call(ClusterVolumes.Leadership l, String what, Supplier<CompletableFuture<T>> send)
      throws NotLeading, CallFailed {
    return calls.call(l, what, send);
  }
}
