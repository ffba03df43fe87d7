package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.ValidateCapabilitiesRequest;
import dev.csisupervisor.client.ValidationResult;
import dev.csisupervisor.client.VolumeCapability;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's modifies and validated registers: ControllerModifyVolume, then the mutable parameters merged
 * into the volume's record with the request's DONE; ValidateVolumeCapabilities of an existing disk, then its record
 * written (UNIMPLEMENTED: written, marked not validated; not confirmed, NOT_FOUND or other capabilities than asked:
 * refused in the plugin's words). Thread-safe.
 */
final class VolumeChanges {
  private static final Logger log = LoggerFactory.getLogger(VolumeChanges.class);

  private final RequestSteps steps;
  private final ClusterVolumes volumes;

  VolumeChanges(RequestSteps steps) {
    this.steps = steps;
    this.volumes = steps.volumes;
  }

  void modify(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest asked) {
    Optional<RequestSteps.Attempt> attempt = steps.begin(l, asked);
    if (attempt.isEmpty()) {
      return;
    }
    ClusterVolumeRequest r = attempt.get().request();
    Secrets secrets = attempt.get().secrets();
    String what = "ControllerModifyVolume " + r.name() + " " + r.spec().mutableParameters() + " (" + r.describe()
        + ")";
    try {
      steps.calls.call(l, what, () -> client.controllerModifyVolumeAsync(r.name(), r.spec().mutableParameters(),
          secrets));
    } catch (LeaderCalls.NotLeading e) {
      return;
    } catch (LeaderCalls.CallFailed e) {
      steps.callFailed(l, r, what, e.getCause(), "");
      return;
    }
    if (volumes.completeModify(l, r)) {
      log.info("cluster controller: {} done: merged into the volume's record", what);
    } else if (volumes.volume(r.pluginId(), r.name()).isEmpty()) {
      steps.fail(l, r, "the volume was deregistered meanwhile (the plugin did modify it)");
    }
  }

  void register(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest asked) {
    Optional<RequestSteps.Attempt> attempt = steps.begin(l, asked);
    if (attempt.isEmpty()) {
      return;
    }
    ClusterVolumeRequest r = attempt.get().request();
    Secrets secrets = attempt.get().secrets();
    ClusterVolumeRequest.Spec spec = r.spec();
    List<VolumeCapability> capabilities = VolumeCreates.capabilities(spec);
    String what = "ValidateVolumeCapabilities " + r.name() + " " + capabilities + " (" + r.describe() + ")";
    boolean validated;
    try {
      ValidationResult result = steps.calls.call(l, what, () -> client.validateVolumeCapabilitiesAsync(
          new ValidateCapabilitiesRequest(r.name(), spec.volumeContext(), capabilities, spec.parameters(),
              spec.mutableParameters(), secrets)));
      if (result.confirmed().isEmpty()) {
        steps.fail(l, r, "controller plugin did not confirm " + capabilities + " for volume " + r.name()
            + (result.message().isEmpty() ? "" : ": " + result.message()));
        return;
      }
      if (!new HashSet<>(result.confirmed().get().capabilities()).equals(new HashSet<>(capabilities))) {
        steps.fail(l, r, "controller plugin confirmed other capabilities than asked: asked " + capabilities
            + ", confirmed " + result.confirmed().get().capabilities()
            + (result.message().isEmpty() ? "" : " (" + result.message() + ")"));
        return;
      }
      validated = true;
    } catch (LeaderCalls.NotLeading e) {
      return;
    } catch (LeaderCalls.CallFailed e) {
      if (CsiOutcome.code(e.getCause()).map(c -> c != StatusCode.UNIMPLEMENTED).orElse(true)) {
        steps.callFailed(l, r, what, e.getCause(), "");
        return;
      }
      validated = false; // the plugin cannot say: registered, marked not validated
    }
    try {
      if (volumes.completeRegister(l, r, r.registered(validated))) {
        log.info("cluster controller: {} done: registered{}", what, validated ? "" : " (not validated: UNIMPLEMENTED)");
      }
    } catch (VolumeStateException e) {
      steps.fail(l, r, e.getMessage());
    }
  }
}
