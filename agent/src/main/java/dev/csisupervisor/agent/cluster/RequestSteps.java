package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What every kind of request's attempt does the same way: the attempt written before the call, the call made as the
 * plugin id's leader, its outcome written after it (retried with backoff after an uncertain answer, failed in the
 * plugin's words after a final one), its secrets read on this machine. Thread-safe.
 */
final class RequestSteps {
  private static final Logger log = LoggerFactory.getLogger(RequestSteps.class);

  final ClusterVolumes volumes;
  final String nodeId;
  final Clock clock;
  final LeaderCalls calls;
  final ControllerCounts counts;
  private final ClusterController.RequestRetry retry;
  private final Supplier<RequestSecrets> secrets;
  private final java.util.function.Consumer<Instant> wakeAt;

  /** @param wakeAt asks for a round at a time a request is due again */
  RequestSteps(ClusterVolumes volumes, String nodeId, Clock clock, LeaderCalls calls, ControllerCounts counts,
      ClusterController.RequestRetry retry, Supplier<RequestSecrets> secrets,
      java.util.function.Consumer<Instant> wakeAt) {
    this.wakeAt = wakeAt;
    this.volumes = volumes;
    this.nodeId = nodeId;
    this.clock = clock;
    this.calls = calls;
    this.counts = counts;
    this.retry = retry;
    this.secrets = secrets;
  }

  /** An attempt about to be sent: the request as written with it, and the secrets read for it. */
  record Attempt(ClusterVolumeRequest request, Secrets secrets) {}

  /**
   * Reads the request's secrets (a file that does not read fails the request), then writes the attempt. Empty: failed,
   * changed meanwhile, or no longer ours.
   */
  Optional<Attempt> begin(ClusterVolumes.Leadership l, ClusterVolumeRequest asked) {
    Secrets read;
    try {
      read = secrets(asked);
    } catch (RequestSecrets.Unreadable e) {
      fail(l, asked, e.getMessage());
      return Optional.empty();
    }
    return sending(l, asked).map(r -> new Attempt(r, read));
  }

  /** The attempt, written before the call: who sends it, since when. Empty: changed meanwhile, or no longer ours. */
  Optional<ClusterVolumeRequest> sending(ClusterVolumes.Leadership l, ClusterVolumeRequest r) {
    return volumes.updateRequest(l, r, r.sending(nodeId, clock.instant()));
  }

  /**
   * When a request answered uncertainly (or not ready yet) after {@code r.attempts()} attempts is sent again; a round
   * is woken then.
   */
  Instant nextAttempt(ClusterVolumeRequest r) {
    Instant next = clock.instant().plus(retry.after(Math.max(1, r.attempts())));
    wakeAt.accept(next);
    return next;
  }

  /** A request's secrets file, read now on this machine (never in etcd). */
  Secrets secrets(ClusterVolumeRequest r) throws RequestSecrets.Unreadable {
    return secrets.get().read(r.pluginId(), r.secretsFile());
  }

  /** The request's secrets for an undo's delete; none if they cannot be read now (the plugin says if it needs them). */
  Secrets secretsOrNone(ClusterVolumeRequest r) {
    try {
      return secrets(r);
    } catch (RequestSecrets.Unreadable e) {
      counts.error(r.describe() + ": its undo is sent without secrets: " + e.getMessage());
      return Secrets.none();
    }
  }

  /**
   * A cancelled request's undo could not finish ({@code why}: no answer, or a name the plugin will not match): kept
   * CANCELLED, tried again on the request backoff (not every round), counted.
   */
  void undoLater(ClusterVolumes.Leadership l, ClusterVolumeRequest r, String why) {
    counts.error(why);
    volumes.updateRequest(l, r, r.undoRetryAt(nextAttempt(r), why));
  }

  /** Writes {@code to} over {@code from}; a failure is counted. */
  void finish(ClusterVolumes.Leadership l, ClusterVolumeRequest from, ClusterVolumeRequest to) {
    if (to.state() == ClusterVolumeRequest.State.FAILED) {
      counts.error(to.message());
    }
    volumes.updateRequest(l, from, to);
  }

  /** Fails {@code r} with "{@code describe} failed: {@code why}". */
  void fail(ClusterVolumes.Leadership l, ClusterVolumeRequest r, String why) {
    finish(l, r, r.failed(r.describe() + " failed: " + why));
  }

  /**
   * Writes a failed call's outcome: retried later (a retriable code, or no answer) or failed (the plugin's words,
   * with {@code more} after them).
   */
  void callFailed(ClusterVolumes.Leadership l, ClusterVolumeRequest r, String what, Throwable cause, String more) {
    Optional<StatusCode> code = CsiOutcome.code(cause);
    String said = what + ": " + code.map(c -> c + ": ").orElse("") + cause.getMessage() + more;
    counts.error(said);
    if (CsiOutcome.uncertain(cause)) {
      Instant next = nextAttempt(r);
      log.info("cluster controller: {}; sent again at {} (attempt {} done)", said, next, r.attempts());
      finish(l, r, r.retryAt(next, said));
    } else {
      log.warn("cluster controller: {} failed: {}", what, said);
      finish(l, r, r.failed(said));
    }
  }
}
