package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.ClaimAccess;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ContentSource;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.CsiOutcome;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.StatusCode;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.registry.PluginInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's creates (from nothing, a snapshot or a clone) and deletes: CreateVolume by name, then the
 * volume registered with its source in the same transaction as the request's DONE; DeleteVolume, then its key. A
 * create from a snapshot not ready yet waits, sending nothing. A create cancelled after it was sent is sent again by
 * name to learn the disk it made, which is then deleted. Thread-safe.
 */
final class VolumeCreates {
  private static final Logger log = LoggerFactory.getLogger(VolumeCreates.class);

  private final RequestSteps steps;
  private final ClusterVolumes volumes;

  VolumeCreates(RequestSteps steps) {
    this.steps = steps;
    this.volumes = steps.volumes;
  }

  /**
   * CreateVolume's arguments for {@code r}, or why there are none: a failure (the request cannot be sent) or a wait
   * (its snapshot is not ready). Writes nothing: the caller does, as the request's state allows.
   */
  private record Arguments(Optional<CreateVolumeRequest> call, String failure, String waiting) {
    static Arguments failed(String why) {
      return new Arguments(Optional.empty(), why, "");
    }
  }

  /**
   * @param undo for an undo's CreateVolume (learning what a cancelled create made): sent whether its snapshot is ready
   *     or not, with its secrets if they read
   */
  private Arguments arguments(PluginInfo controller, ClusterVolumeRequest r, VolumesSnapshot s, boolean undo) {
    ClusterVolumeRequest.Spec spec = r.spec();
    try {
      Optional<TopologyRequirement> topology = spec.requisite().isEmpty() && spec.preferred().isEmpty()
          ? Optional.empty() : Optional.of(new TopologyRequirement(spec.requisite(), spec.preferred()));
      if (topology.isPresent() && !controller.fingerprint().pluginCapabilities()
          .contains(CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS)) {
        return Arguments.failed("controller plugin " + controller.name() + " does not offer "
            + CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS + ", so a topology cannot be asked of it (CSI)");
      }
      Optional<ContentSource> source = Optional.empty();
      long sourceBytes = 0;
      if (spec.source().isPresent()) {
        VolumeSource from = spec.source().get();
        if (from.type() == VolumeSource.Type.SNAPSHOT) {
          Optional<ClusterVolumeSnapshot> snapshot = s.snapshot(r.pluginId(), from.id());
          if (snapshot.isEmpty() && !undo) {
            return Arguments.failed("snapshot " + from.id() + " is not recorded (deleted meanwhile?)");
          }
          if (snapshot.isPresent() && !snapshot.get().readyToUse() && !undo) {
            return new Arguments(Optional.empty(), "", "waiting for snapshot " + from.id() + " ("
                + snapshot.get().name() + ") to be ready; nothing sent yet");
          }
          sourceBytes = snapshot.map(ClusterVolumeSnapshot::sizeBytes).orElse(0L);
          source = Optional.of(ContentSource.snapshot(from.id()));
        } else {
          Optional<ClusterVolume> volume = s.volume(r.pluginId(), from.id());
          if (volume.isEmpty() && !undo) {
            return Arguments.failed("volume " + from.id() + " to clone is not registered (deleted meanwhile?)");
          }
          sourceBytes = volume.map(ClusterVolume::capacityBytes).orElse(0L);
          source = Optional.of(ContentSource.volume(from.id()));
        }
        if (spec.requiredBytes() != 0 && spec.requiredBytes() < sourceBytes) {
          return Arguments.failed(spec.requiredBytes() + " bytes asked, smaller than its source " + from + " ("
              + sourceBytes + " bytes; CSI: a volume made from a source is at least as big)");
        }
      }
      long required = spec.requiredBytes() == 0 ? sourceBytes : spec.requiredBytes();
      if (topology.isEmpty() && !undo && controller.fingerprint().pluginCapabilities()
          .contains(CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS)) {
        // No topology asked: the segments the controller agent's last capacity reading found room in, most first.
        List<Map<String, String>> room = CapacityReading.segmentsWithRoom(volumes.capacity(r.pluginId()),
            spec.parameters(), required);
        if (!room.isEmpty()) {
          topology = Optional.of(new TopologyRequirement(List.of(), room));
        }
      }
      Optional<CapacityRange> capacity = required == 0 && spec.limitBytes() == 0 ? Optional.empty()
          : Optional.of(new CapacityRange(required, spec.limitBytes()));
      CreateVolumeRequest asked = new CreateVolumeRequest(r.name(), capacity, capabilities(spec), spec.parameters(),
          undo ? steps.secretsOrNone(r) : steps.secrets(r), topology);
      if (source.isPresent()) {
        asked = asked.withContentSource(source.get());
      }
      if (!spec.mutableParameters().isEmpty()) {
        asked = asked.withMutableParameters(spec.mutableParameters());
      }
      return new Arguments(Optional.of(asked), "", "");
    } catch (RequestSecrets.Unreadable | IllegalArgumentException e) {
      return Arguments.failed(e.getMessage());
    }
  }

  /** The volume capabilities a spec asks: one per access mode, with its access type. */
  static List<VolumeCapability> capabilities(ClusterVolumeRequest.Spec spec) {
    List<VolumeCapability> capabilities = new ArrayList<>();
    for (dev.csisupervisor.catalog.VolumeAccessMode m : spec.accessModes()) {
      capabilities.add(VolumeAttacher.capability(new ClaimAccess(spec.block(), spec.fsType()),
          AccessMode.valueOf(m.name())));
    }
    return capabilities;
  }

  void create(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, ClusterVolumeRequest r,
      VolumesSnapshot s) {
    Arguments args = arguments(controller, r, s, false);
    if (!args.failure().isEmpty()) {
      steps.fail(l, r, args.failure());
      return;
    }
    if (!args.waiting().isEmpty()) {
      if (!args.waiting().equals(r.message())) {
        volumes.updateRequest(l, r, r.waiting(args.waiting()));
      }
      return;
    }
    Optional<CreateVolumeRequest> asked = args.call();
    Optional<ClusterVolumeRequest> sent = steps.sending(l, r);
    if (sent.isEmpty()) {
      return; // changed meanwhile (withdrawn, asked again) or no longer ours: the next round reads it again
    }
    r = sent.get();
    String what = "CreateVolume " + r.name() + " (" + r.describe() + ")";
    CsiVolume made;
    try {
      made = steps.calls.call(l, what, () -> client.createVolumeAsync(asked.get()));
    } catch (LeaderCalls.NotLeading e) {
      return; // the attempt stays PENDING: the successor sends it again by name
    } catch (LeaderCalls.CallFailed e) {
      boolean full = CsiOutcome.code(e.getCause()).map(c -> c == StatusCode.RESOURCE_EXHAUSTED).orElse(false);
      steps.callFailed(l, r, what, e.getCause(), full ? " (capacity as last read: "
          + CapacityReading.describe(volumes.capacity(r.pluginId()), r.spec().parameters()) + ")" : "");
      return;
    }
    steps.counts.created();
    ClusterVolumeRequest.Spec spec = r.spec();
    ClusterVolume volume;
    try {
      volume = new ClusterVolume(r.pluginId(), made.volumeId(), made.capacityBytes(), spec.accessModes(),
          made.accessibleTopology(), spec.parameters(), made.volumeContext(), spec.source(), spec.mutableParameters(),
          true);
    } catch (IllegalArgumentException e) {
      steps.finish(l, r, r.failed(r.describe() + ": CreateVolume answered a volume the cluster cannot register: "
          + e.getMessage()));
      return;
    }
    try {
      if (volumes.completeCreate(l, r, volume)) {
        log.info("cluster controller: {} done: volume {} ({} bytes) registered", what, made.volumeId(),
            made.capacityBytes());
      }
      // else cancelled meanwhile (its undo, next round, learns this disk by name and deletes it), or no longer ours
    } catch (VolumeStateException e) {
      steps.finish(l, r, r.failed(e.getMessage()));
    }
  }

  /**
   * A create cancelled after it was sent: CreateVolume by name again (idempotent: the disk it made, if any, is
   * answered; else one is made now), then DeleteVolume of it, then the request removed. A final answer to the create
   * means it made nothing: removed at once.
   */
  void undo(ClusterVolumes.Leadership l, PluginInfo controller, CsiClient client, ClusterVolumeRequest r,
      VolumesSnapshot s) {
    Arguments args = arguments(controller, r, s, true);
    Optional<CreateVolumeRequest> asked = args.call();
    if (asked.isEmpty()) {
      // Nothing can be sent to learn what it made (a topology the plugin cannot take: it made nothing either way).
      steps.counts.error("cancelled " + r.describe() + ": " + args.failure());
    }
    String what = "CreateVolume " + r.name() + " (to learn what the cancelled " + r.describe() + " made)";
    Optional<String> made = Optional.empty();
    if (asked.isPresent()) {
      try {
        made = Optional.of(steps.calls.call(l, what, () -> client.createVolumeAsync(asked.get())).volumeId());
      } catch (LeaderCalls.NotLeading e) {
        return;
      } catch (LeaderCalls.CallFailed e) {
        if (CsiOutcome.uncertain(e.getCause()) || alreadyExists(e.getCause())) {
          // No answer, or something of that name the plugin will not match (ALREADY_EXISTS): not "nothing made".
          // Kept CANCELLED, tried again on the backoff; status shows it.
          steps.undoLater(l, r, what + ": " + e.getMessage());
          return;
        }
        // another final answer: nothing made by that name
      }
    }
    if (made.isPresent() && !deleteUnwanted(l, client, r, made.get())) {
      return;
    }
    if (volumes.completeCancel(l, r, Optional.empty())) {
      log.info("cluster controller: cancelled {} undone{}", r.describe(),
          made.map(v -> ": volume " + v + " deleted").orElse(": it made nothing"));
    }
  }

  /** ALREADY_EXISTS: the plugin has something of that name it will not match to the call. */
  static boolean alreadyExists(Throwable cause) {
    return CsiOutcome.code(cause).map(c -> c == StatusCode.ALREADY_EXISTS).orElse(false);
  }

  /** DeleteVolume of a disk no record names; false (said, counted) if it stays. */
  private boolean deleteUnwanted(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest r,
      String volumeId) {
    String what = "DeleteVolume " + volumeId + " (made by " + r.describe() + ", cancelled)";
    try {
      Secrets secrets = steps.secretsOrNone(r);
      steps.calls.call(l, what, () -> client.deleteVolumeAsync(volumeId, secrets));
      steps.counts.deleted();
      return true;
    } catch (LeaderCalls.NotLeading e) {
      return false;
    } catch (LeaderCalls.CallFailed e) {
      if (CsiOutcome.notFound(e.getCause())) {
        return true;
      }
      String said = what + " failed (" + e.getMessage() + "): volume " + volumeId + " of plugin " + r.pluginId()
          + " exists and no record names it; tried again on the backoff";
      log.error("cluster controller: {}", said);
      steps.undoLater(l, r, said);
      return false;
    }
  }

  void delete(ClusterVolumes.Leadership l, CsiClient client, ClusterVolumeRequest asked, VolumesSnapshot s) {
    Optional<RequestSteps.Attempt> attempt = steps.begin(l, asked);
    if (attempt.isEmpty()) {
      return;
    }
    ClusterVolumeRequest r = attempt.get().request();
    Secrets secrets = attempt.get().secrets();
    String what = "DeleteVolume " + r.name() + " (" + r.describe() + ")";
    try {
      steps.calls.call(l, what, () -> client.deleteVolumeAsync(r.name(), secrets));
    } catch (LeaderCalls.NotLeading e) {
      return;
    } catch (LeaderCalls.CallFailed e) {
      if (!CsiOutcome.notFound(e.getCause())) {
        String id = r.name();
        List<String> cut = s.snapshots().stream().filter(x -> x.pluginId().equals(r.pluginId())
            && x.sourceVolumeId().equals(id)).map(ClusterVolumeSnapshot::snapshotId).toList();
        steps.callFailed(l, r, what, e.getCause(), cut.isEmpty() ? "" : " (snapshots of it: " + String.join(", ", cut)
            + ")");
        return;
      }
    }
    steps.counts.deleted();
    if (volumes.completeDelete(l, r)) {
      log.info("cluster controller: {} done: the volume's key removed", what);
    } else if (volumes.request(r.kind(), r.pluginId(), r.name()).isEmpty()) {
      // Cancelled while the plugin deleted it: the disk is gone all the same, so its record goes too.
      try {
        if (volumes.deregister(r.pluginId(), r.name())) {
          log.info("cluster controller: {} done after its cancel: the disk is gone, its record removed", what);
        }
      } catch (VolumeStateException e) {
        steps.counts.error(what + ": " + e.getMessage());
        log.warn("cluster controller: {} succeeded after its cancel, but the record stays: {}", what, e.getMessage());
      }
    }
  }

  /** "a, b" of what a volume list names. */
  static String ids(List<ClusterVolume> vs) {
    return vs.stream().map(ClusterVolume::volumeId).collect(Collectors.joining(", "));
  }
}
