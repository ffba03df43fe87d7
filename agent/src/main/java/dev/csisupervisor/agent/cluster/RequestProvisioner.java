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
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's creates and deletes ({@link ClusterVolumeRequest}), level-triggered as Kubernetes'
 * external-provisioner: each round, every due request of a plugin id it leads gets one attempt, on a few provisioning
 * threads beside the round (a CreateVolume can take minutes); the attempt is written before the call, the outcome
 * after it: DONE (the volume registered, in the same transaction), retried with backoff after an uncertain answer,
 * or FAILED in the plugin's words. A create cancelled while the plugin made its disk deletes it again; a delete
 * cancelled mid-call drops the record of the disk it deleted. Thread-safe.
 */
final class RequestProvisioner {
  private static final Logger log = LoggerFactory.getLogger(RequestProvisioner.class);

  private final ClusterVolumes volumes;
  private final String nodeId;
  private final Clock clock;
  private final LeaderCalls calls;
  private final ControllerCounts counts;
  private final ClusterController.RequestRetry retry;
  private final java.util.function.Supplier<RequestSecrets> secrets;
  private final java.util.function.BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients;
  /** Requests whose attempt is under way on {@link #provisioner}, by kind, plugin and name. */
  private final Set<String> provisioning = ConcurrentHashMap.newKeySet();
  /** Where creates and deletes run, beside the rounds: a few at once, each request one at a time. */
  private final ExecutorService provisioner;

  RequestProvisioner(ClusterVolumes volumes, String nodeId, Clock clock, LeaderCalls calls, ControllerCounts counts,
      ClusterController.RequestRetry retry, java.util.function.Supplier<RequestSecrets> secrets,
      java.util.function.BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients,
      ExecutorService provisioner) {
    this.volumes = volumes;
    this.nodeId = nodeId;
    this.clock = clock;
    this.calls = calls;
    this.counts = counts;
    this.retry = retry;
    this.secrets = secrets;
    this.clients = clients;
    this.provisioner = provisioner;
  }

  /** Every due request of the plugin id, oldest first; each one attempt per round at most. */
  void provision(ClusterVolumes.Leadership l, PluginInfo controller, VolumesSnapshot s) {
    List<ClusterVolumeRequest> due = s.openRequests(controller.name()).stream()
        .filter(r -> r.state() == ClusterVolumeRequest.State.PENDING)
        .filter(r -> r.nextAttempt().map(t -> !t.isAfter(clock.instant())).orElse(true))
        .sorted(java.util.Comparator.comparing(ClusterVolumeRequest::requested))
        .toList();
    if (due.isEmpty()) {
      return;
    }
    CsiClient client = clients.apply(l, controller);
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
    return secrets.get().read(r.pluginId(), r.secretsFile());
  }
}
