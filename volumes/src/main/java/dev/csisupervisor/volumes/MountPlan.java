package dev.csisupervisor.volumes;

import dev.csisupervisor.volumes.ReadyPlugins.ControllerPlugin;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.Staging;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * What one mount is about to do, decided by {@link VolumeMounter} before anything is committed or called: the
 * record it starts from, the staging it uses (and whether it stages), the controller that publishes (if one
 * does here), and the target. From it come the two records the mount commits: its {@link #intent()} before the
 * first call, and its {@link #done} after the last. An immutable value.
 *
 * @param rec the volume's record as memory holds it ({@code null}: none)
 * @param base the record the mount builds on: {@code rec}, or a fresh one where the volume is not on the node yet
 * @param existing the usage of the claim already in {@code base}, or {@code null}
 * @param stagingName the volume's staging this mount uses; empty: the node plugin does not stage
 * @param staging that staging as recorded (LOST if the mount table lost it), or {@code null}
 * @param stage whether the mount calls NodeStageVolume
 * @param controller the controller plugin whose ControllerPublishVolume the mount calls, if it calls one
 * @param newVolume whether the volume is new on this node (it holds a reserved slot until its intent commits)
 */
record MountPlan(NodePlugin node, VolumeClaim claim, VolumeRecord rec, VolumeRecord base, UsageRecord existing,
    String stagingName, Staging staging, boolean stage, Optional<ControllerPlugin> controller, boolean newVolume,
    Path target) {

  /** The controller publication is made here for the first time. */
  boolean firstPublish() {
    return controller.isPresent() && base.controller() != ControllerState.PUBLISHED;
  }

  /** The staging path on the host, if the mount uses one. */
  Optional<Path> stagingPath() {
    return stagingName.isEmpty() ? Optional.empty() : Optional.of(base.stagingPath(stagingName));
  }

  /** The publish context to stage and publish with when no controller publish is made here. */
  Map<String, String> knownPublishContext() {
    return base.controller() == ControllerState.PUBLISHED ? base.publishContext() : claim.publishContext();
  }

  /** Step 3: the record committed before the first call (the allocation PUBLISHING, the staging STAGING). */
  VolumeRecord intent() {
    UsageRecord u = existing != null ? existing
        : new UsageRecord(claim.usage(), claim.capability(), stagingName, new TreeMap<>(), false);
    u = u.withNeedsClaim(u.needsClaim() || claim.redoNeedsClaim());
    VolumeRecord intent = base.withUsage(u.withAlloc(claim.allocId(), AllocPhase.PUBLISHING));
    if (stage) {
      intent = intent.withStaging(stagingName, new Staging(StageState.STAGING, false,
          staging != null ? staging.compatibility() : VolumeRecord.compatibility(claim.capability())));
    }
    if (intent.volumeContext().isEmpty() && !claim.volumeContext().isEmpty()) {
      intent = intent.withVolumeContext(claim.volumeContext());
    }
    if (claim.secretsFile().isPresent()) {
      intent = intent.withSecretsFile(claim.secretsFile());
    }
    if (firstPublish()) {
      intent = intent.withController(ControllerState.PUBLISHING, node.nodeId(), Map.of());
    }
    return intent;
  }

  /**
   * Step 4: the record committed once every call succeeded.
   *
   * @param stagingMounted whether the staging path is a mount point now (asked only if the mount staged)
   */
  VolumeRecord done(VolumeRecord intent, Map<String, String> publishContext, boolean stagingMounted) {
    VolumeRecord done = intent.withUsage(intent.usages().get(claim.usage()).withAlloc(claim.allocId(),
        AllocPhase.PUBLISHED));
    if (stage) {
      done = done.withStaging(stagingName, done.stagings().get(stagingName).withState(StageState.STAGED)
          .withMounted(stagingMounted));
    }
    if (firstPublish()) {
      done = done.withController(ControllerState.PUBLISHED, node.nodeId(), publishContext);
    } else if (done.controller() == ControllerState.NONE) {
      done = done.withController(ControllerState.NONE, "", publishContext);
    }
    return done;
  }
}
