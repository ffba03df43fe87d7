package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.CreateSnapshotRequest;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.CsiSnapshot;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's snapshots, as Kubernetes' external-snapshotter: CreateSnapshot by name, the snapshot recorded
 * as soon as it answers (its id known from then on), and sent again while it is not ready (CSI: the CO polls
 * readiness by sending the same CreateSnapshot); DeleteSnapshot, then its record. A snapshot cancelled after it was
 * sent is deleted by the id it was given, or learnt by sending it again by name: nothing leaks. Thread-safe.
 */
final class SnapshotCalls {
  private static final Logger log = LoggerFactory.getLogger(SnapshotCalls.class);

  private final RequestSteps steps;
  private final ClusterVolumes volumes;

  SnapshotCalls(RequestSteps steps) {
    this.steps = steps;
    this.volumes = steps.volumes;
  }

  /** CreateSnapshot's arguments; a request whose secrets do not read is failed (written). */
  private Optional<CreateSnapshotRequest> arguments(ClusterVolumes.Leadership l, ClusterVolumeRequest r) {
    try {
      return Optional.of(call(r, steps.secrets(r)));
    } catch (RequestSecrets.Unreadable | IllegalArgumentException e) {
      steps.fail(l, r, e.getMessage());
      return Optional.empty();
    }
  }

  private static CreateSnapshotRequest call(ClusterVolumeRequest r, Secrets secrets) {
    String source = r.spec().source().map(VolumeSource::id).orElseThrow();
    return new CreateSnapshotRequest(source, r.name(), r.spec().parameters(), secrets);
  }

  void snapshot(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest asked) {
    Optional<CreateSnapshotRequest> call = arguments(l, asked);
    if (call.isEmpty()) {
      return;
    }
    Optional<ClusterVolumeRequest> sent = steps.sending(l, asked);
    if (sent.isEmpty()) {
      return;
    }
    ClusterVolumeRequest r = sent.get();
    String what = "CreateSnapshot " + r.name() + " of volume " + call.get().sourceVolumeId() + " (" + r.describe()
        + ")";
    CsiSnapshot cut;
    try {
      cut = steps.calls.call(l, what, () -> client.createSnapshotAsync(call.get()));
    } catch (LeaderCalls.NotLeading e) {
      return; // stays PENDING: the successor sends it again by name
    } catch (LeaderCalls.CallFailed e) {
      steps.callFailed(l, r, what, e.getCause(), "");
      return;
    }
    ClusterVolumeSnapshot record;
    try {
      record = new ClusterVolumeSnapshot(r.pluginId(), cut.snapshotId(), r.name(), call.get().sourceVolumeId(),
          cut.sizeBytes(), cut.creationTime(), cut.readyToUse());
    } catch (IllegalArgumentException e) {
      steps.fail(l, r, "CreateSnapshot answered a snapshot the cluster cannot record: " + e.getMessage());
      return;
    }
    ClusterVolumeRequest to;
    if (cut.readyToUse()) {
      to = r.done(cut.snapshotId());
    } else {
      Instant at = cut.creationTime().orElse(steps.clock.instant());
      to = r.notReady(cut.snapshotId(), steps.nextAttempt(r), "cut at " + at + ", not ready");
    }
    if (volumes.recordSnapshot(l, r, record, to).isPresent()) {
      log.info("cluster controller: {}: snapshot {} {}", what, cut.snapshotId(), cut.readyToUse() ? "ready"
          : "cut, not ready: sent again to learn when it is");
    }
    // else cancelled meanwhile (its undo deletes this snapshot by name) or no longer ours
  }

  void delete(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest asked, VolumesSnapshot s) {
    Optional<RequestSteps.Attempt> attempt = steps.begin(l, asked);
    if (attempt.isEmpty()) {
      return;
    }
    ClusterVolumeRequest r = attempt.get().request();
    Secrets secrets = attempt.get().secrets();
    String what = "DeleteSnapshot " + r.name() + " (" + r.describe() + ")";
    try {
      steps.calls.call(l, what, () -> client.deleteSnapshotAsync(r.name(), secrets));
    } catch (LeaderCalls.NotLeading e) {
      return;
    } catch (LeaderCalls.CallFailed e) {
      if (!CsiOutcome.notFound(e.getCause())) {
        boolean inUse = CsiOutcome.code(e.getCause()).map(c -> c == StatusCode.FAILED_PRECONDITION).orElse(false);
        List<ClusterVolume> made = s.volumes().stream().filter(v -> v.pluginId().equals(r.pluginId())
            && v.source().equals(Optional.of(VolumeSource.snapshot(r.name())))).toList();
        steps.callFailed(l, r, what, e.getCause(), inUse && !made.isEmpty()
            ? " (volumes made from it: " + VolumeCreates.ids(made) + ")" : "");
        return;
      }
    }
    if (volumes.completeSnapshotDelete(l, r)) {
      log.info("cluster controller: {} done: its record removed", what);
    }
  }

  /**
   * A snapshot cancelled after it was sent: deleted by the id it was given, or, if it never answered, sent again by
   * name to learn it (a final answer: nothing was cut by that name); then the request and the record removed.
   */
  void undo(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest r) {
    Optional<String> id = r.volumeId().isEmpty() ? Optional.empty() : Optional.of(r.volumeId());
    if (id.isEmpty()) {
      // Never written over the cancelled request (a failure there would lose what the first call cut).
      CreateSnapshotRequest call = call(r, steps.secretsOrNone(r));
      String what = "CreateSnapshot " + r.name() + " (to learn what the cancelled " + r.describe() + " cut)";
      try {
        id = Optional.of(steps.calls.call(l, what, () -> client.createSnapshotAsync(call)).snapshotId());
      } catch (LeaderCalls.NotLeading e) {
        return;
      } catch (LeaderCalls.CallFailed e) {
        if (CsiOutcome.uncertain(e.getCause()) || VolumeCreates.alreadyExists(e.getCause())) {
          steps.undoLater(l, r, what + ": " + e.getMessage()); // kept CANCELLED: not "nothing cut"
          return;
        }
      }
    }
    if (id.isPresent()) {
      String snapshotId = id.get();
      String what = "DeleteSnapshot " + snapshotId + " (cut by the cancelled " + r.describe() + ")";
      try {
        Secrets secrets = steps.secretsOrNone(r);
      steps.calls.call(l, what, () -> client.deleteSnapshotAsync(snapshotId, secrets));
      } catch (LeaderCalls.NotLeading e) {
        return;
      } catch (LeaderCalls.CallFailed e) {
        if (!CsiOutcome.notFound(e.getCause())) {
          steps.undoLater(l, r, what + " failed: " + e.getMessage() + "; tried again on the backoff");
          return;
        }
      }
    }
    if (volumes.completeCancel(l, r, id)) {
      log.info("cluster controller: cancelled {} undone{}", r.describe(),
          id.map(x -> ": snapshot " + x + " deleted").orElse(": it cut nothing"));
    }
  }
}
