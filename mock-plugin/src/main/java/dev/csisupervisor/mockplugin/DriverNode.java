package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.DriverChecks.notFound;
import static dev.csisupervisor.mockplugin.DriverChecks.requireCapability;
import static dev.csisupervisor.mockplugin.DriverChecks.requireId;
import static dev.csisupervisor.mockplugin.InMemoryDriver.healthy;

import dev.csisupervisor.csi.v1.NodeExpandVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeResponse;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsResponse;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeResponse;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeResponse;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeResponse;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeResponse;
import dev.csisupervisor.csi.v1.VolumeUsage;
import dev.csisupervisor.mockplugin.InMemoryDriver.VolumeState;
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;

/**
 * The Node side of the {@link InMemoryDriver}: which volumes are staged and published where on
 * this node, with the CSI spec v1.12.0's error codes and idempotency rules. Nothing is mounted:
 * publishing creates the target path the spec asks the plugin to create (a directory for a mount
 * volume, a file for a block volume) and unpublishing removes it; staging is bookkeeping only.
 * Every call runs under the driver's lock and saves a change before it answers. Thread-safe.
 */
final class DriverNode {

  /**
   * The Node RPC capabilities this side implements and advertises with
   * {@link MockCsiPlugin.Builder#allCapabilities()}.
   */
  static final List<NodeServiceCapability> CAPABILITIES = List.copyOf(Capabilities.NODE.of(
      NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
      NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
      NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
      NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
      NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));

  private final InMemoryDriver driver;
  private final Script script;

  DriverNode(InMemoryDriver driver, Script script) {
    this.driver = driver;
    this.script = script;
  }

  NodeStageVolumeResponse nodeStage(NodeStageVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("staging_target_path", r.getStagingTargetPath());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    synchronized (driver.lock()) {
      VolumeState v = driver.volume(r.getVolumeId());
      v.stagedAt.add(r.getStagingTargetPath());
      driver.persistLocked();
    }
    return NodeStageVolumeResponse.getDefaultInstance();
  }

  NodeUnstageVolumeResponse nodeUnstage(NodeUnstageVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("staging_target_path", r.getStagingTargetPath());
    synchronized (driver.lock()) {
      VolumeState v = driver.findVolume(r.getVolumeId());
      if (v != null) {
        v.stagedAt.remove(r.getStagingTargetPath());
      }
      driver.persistLocked();
    }
    return NodeUnstageVolumeResponse.getDefaultInstance();
  }

  NodePublishVolumeResponse nodePublish(NodePublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("target_path", r.getTargetPath());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    synchronized (driver.lock()) {
      VolumeState v = driver.volume(r.getVolumeId());
      if (script.hasNodeCapability(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME)) {
        if (r.getStagingTargetPath().isEmpty()) {
          throw Status.FAILED_PRECONDITION.withDescription(
              "staging_target_path is required: this plugin has STAGE_UNSTAGE_VOLUME").asRuntimeException();
        }
        if (!v.stagedAt.contains(r.getStagingTargetPath())) {
          throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id + " is not staged at "
              + r.getStagingTargetPath()).asRuntimeException();
        }
      }
      Boolean readonly = v.publishedAt.get(r.getTargetPath());
      if (readonly != null && readonly != r.getReadonly()) {
        throw Status.ALREADY_EXISTS.withDescription("volume " + v.id + " is already published at "
            + r.getTargetPath() + " with readonly=" + readonly).asRuntimeException();
      }
      createTarget(Path.of(r.getTargetPath()), r.getVolumeCapability().hasBlock());
      v.publishedAt.put(r.getTargetPath(), r.getReadonly());
      driver.persistLocked();
    }
    return NodePublishVolumeResponse.getDefaultInstance();
  }

  NodeUnpublishVolumeResponse nodeUnpublish(NodeUnpublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("target_path", r.getTargetPath());
    synchronized (driver.lock()) {
      VolumeState v = driver.findVolume(r.getVolumeId());
      if (v != null && v.publishedAt.remove(r.getTargetPath()) != null) {
        // Forgotten first, so a crash between the two leaves a stray directory, not a volume
        // published at a path that no longer exists.
        driver.persistLocked();
        removeTarget(Path.of(r.getTargetPath()));
      }
    }
    return NodeUnpublishVolumeResponse.getDefaultInstance();
  }

  NodeGetVolumeStatsResponse nodeGetVolumeStats(NodeGetVolumeStatsRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("volume_path", r.getVolumePath());
    synchronized (driver.lock()) {
      VolumeState v = volumeAt(r.getVolumeId(), r.getVolumePath());
      return NodeGetVolumeStatsResponse.newBuilder()
          .addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES)
              .setTotal(v.capacity).setUsed(0).setAvailable(v.capacity))
          .setVolumeCondition(healthy())
          .build();
    }
  }

  NodeExpandVolumeResponse nodeExpand(NodeExpandVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("volume_path", r.getVolumePath());
    synchronized (driver.lock()) {
      VolumeState v = volumeAt(r.getVolumeId(), r.getVolumePath());
      long required = r.getCapacityRange().getRequiredBytes();
      if (required > v.capacity) {
        v.capacity = required;
        driver.persistLocked();
      }
      return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(v.capacity).build();
    }
  }

  /** Under the lock: the volume, which must be published or staged at {@code path} (else NOT_FOUND). */
  private VolumeState volumeAt(String volumeId, String path) {
    VolumeState v = driver.volume(volumeId);
    if (!v.publishedAt.containsKey(path) && !v.stagedAt.contains(path)) {
      throw notFound("volume " + v.id + " is not published or staged at " + path);
    }
    return v;
  }

  private static void createTarget(Path target, boolean block) {
    try {
      if (block) {
        if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
          Files.createFile(target);
        }
      } else {
        Files.createDirectories(target);
      }
    } catch (IOException e) {
      throw Status.INTERNAL.withDescription("cannot create target path " + target + ": " + e)
          .asRuntimeException();
    }
  }

  private static void removeTarget(Path target) {
    try {
      Files.deleteIfExists(target);
    } catch (DirectoryNotEmptyException e) {
      throw Status.INTERNAL.withDescription("target path " + target + " is not empty").asRuntimeException();
    } catch (IOException e) {
      throw Status.INTERNAL.withDescription("cannot remove target path " + target + ": " + e)
          .asRuntimeException();
    }
  }
}
