package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.registry.PluginInfo;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's requests ({@link ClusterVolumeRequest}: creates, deletes, snapshots, modifies, registers),
 * level-triggered as Kubernetes' external-provisioner and external-snapshotter: each round, every due request of a
 * plugin id it leads gets one attempt, on a few provisioning threads beside the round (a CreateVolume can take
 * minutes); the plugin's capabilities are checked first (a request it cannot do fails naming what it lacks); the
 * attempt is written before the call, the outcome after it: DONE, retried with backoff after an uncertain answer, or
 * FAILED in the plugin's words. A create or snapshot cancelled after it was sent is undone: what it made is learnt by
 * name and deleted. Thread-safe.
 */
final class RequestProvisioner {
  private static final Logger log = LoggerFactory.getLogger(RequestProvisioner.class);

  private final RequestSteps steps;
  private final VolumeCreates creates;
  private final SnapshotCalls snapshots;
  private final VolumeChanges changes;
  private final java.util.function.BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients;
  /** Requests whose attempt is under way on {@link #provisioner}, by kind, plugin and name. */
  private final Set<String> provisioning = ConcurrentHashMap.newKeySet();
  /** Where requests run, beside the rounds: a few at once, each request one at a time. */
  private final ExecutorService provisioner;

  RequestProvisioner(ClusterVolumes volumes, String nodeId, Clock clock, LeaderCalls calls, ControllerCounts counts,
      ClusterController.RequestRetry retry, java.util.function.Supplier<RequestSecrets> secrets,
      java.util.function.BiFunction<ClusterVolumes.Leadership, PluginInfo, CsiClient> clients,
      ExecutorService provisioner, java.util.function.Consumer<java.time.Instant> wakeAt) {
    this.steps = new RequestSteps(volumes, nodeId, clock, calls, counts, retry, secrets, wakeAt);
    this.creates = new VolumeCreates(steps);
    this.snapshots = new SnapshotCalls(steps);
    this.changes = new VolumeChanges(steps);
    this.clients = clients;
    this.provisioner = provisioner;
  }

  /** Every due request of the plugin id, oldest first; each one attempt per round at most. */
  void provision(ClusterVolumes.Leadership l, PluginInfo controller, VolumesSnapshot s) {
    List<ClusterVolumeRequest> due = s.openRequests(controller.name()).stream()
        .filter(r -> r.state() == ClusterVolumeRequest.State.CANCELLED
            || r.state() == ClusterVolumeRequest.State.PENDING)
        .filter(r -> r.nextAttempt().map(t -> !t.isAfter(steps.clock.instant())).orElse(true))
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
            provisionOne(l, controller, client, r, s);
          } catch (EtcdException e) {
            steps.counts.error(e.getMessage());
            log.debug("cluster controller: {} deferred: {}", r.describe(), e.getMessage());
          } catch (RuntimeException e) {
            steps.counts.error(e.toString());
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
      ClusterVolumeRequest r, VolumesSnapshot s) {
    Set<String> has = controller.fingerprint().controllerCapabilities();
    List<String> lacks = new ArrayList<>(RequestCapabilities.needs(r));
    lacks.removeAll(has);
    if (!lacks.isEmpty()) {
      String why = "controller plugin " + controller.name() + " of controller agent " + steps.nodeId
          + " does not offer " + String.join(", ", lacks) + " (it has: " + String.join(", ", new TreeSet<>(has))
          + ")";
      if (r.state() == ClusterVolumeRequest.State.CANCELLED) {
        steps.counts.error(r.describe() + ": cannot undo: " + why);
        return;
      }
      steps.fail(l, r, why);
      return;
    }
    boolean undo = r.state() == ClusterVolumeRequest.State.CANCELLED;
    switch (r.kind()) {
      case CREATE -> {
        if (undo) {
          creates.undo(l, controller, client, r, s);
        } else {
          creates.create(l, controller, client, r, s);
        }
      }
      case DELETE -> creates.delete(l, client, r, s);
      case SNAPSHOT -> {
        if (undo) {
          snapshots.undo(l, client, r);
        } else {
          snapshots.snapshot(l, client, r);
        }
      }
      case SNAPSHOT_DELETE -> snapshots.delete(l, client, r, s);
      case MODIFY -> changes.modify(l, client, r);
      case REGISTER -> changes.register(l, client, r);
    }
  }
}
