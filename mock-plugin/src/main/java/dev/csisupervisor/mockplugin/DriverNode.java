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
import io.grpc.Status;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;

/**
 * The Node side of the {@link InMemoryDriver}: which volumes are staged and published where on
 * this node, with the CSI spec v1.12.0's error codes and idempotency rules. By default nothing is
 * mounted: publishing creates the target path the spec asks the plugin to create (a directory for
 * a mount volume, a file for a block volume) and unpublishing removes it; staging is bookkeeping
 * only. With {@link RealMounts} the volume's data is also bind-mounted at the staging and target
 * paths and unmounted again; whether a path is mounted is asked of the kernel. Every call
 * runs under the driver's lock and saves a change before it answers; with real mounts, that
 * includes running {@code mount} or {@code umount} (milliseconds, on the event loop). Thread-safe.
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
  /** Null: nothing is mounted. */
  private final RealMounts realMounts;

  DriverNode(InMemoryDriver driver, Script script, RealMounts realMounts) {
    this.driver = driver;
    this.script = script;
    this.realMounts = realMounts;
  }

  NodeStageVolumeResponse nodeStage(NodeStageVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("staging_target_path", r.getStagingTargetPath());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    synchronized (driver.lock()) {
      MockVolume v = driver.volume(r.getVolumeId());
      boolean mounted = realMounts != null
          && realMounts.stage(v, Path.of(r.getStagingTargetPath()), r.getVolumeCapability().hasBlock());
      v.stagedAt.add(r.getStagingTargetPath());
      persistOrUnmount(mounted, r.getStagingTargetPath());
      recordOnCloud(SharedCloud.NodeUse.STAGED, v.id, r.getStagingTargetPath(), true);
    }
    return NodeStageVolumeResponse.getDefaultInstance();
  }

  NodeUnstageVolumeResponse nodeUnstage(NodeUnstageVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("staging_target_path", r.getStagingTargetPath());
    synchronized (driver.lock()) {
      MockVolume v = driver.findVolume(r.getVolumeId());
      if (v != null && v.stagedAt.contains(r.getStagingTargetPath())) {
        if (realMounts != null) {
          realMounts.unmount(v, Path.of(r.getStagingTargetPath())); // failing: still staged
        }
        v.stagedAt.remove(r.getStagingTargetPath());
      }
      driver.persistLocked();
      recordOnCloud(SharedCloud.NodeUse.STAGED, r.getVolumeId(), r.getStagingTargetPath(), false);
    }
    return NodeUnstageVolumeResponse.getDefaultInstance();
  }

  NodePublishVolumeResponse nodePublish(NodePublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("target_path", r.getTargetPath());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    boolean block = r.getVolumeCapability().hasBlock();
    synchronized (driver.lock()) {
      MockVolume v = driver.volume(r.getVolumeId());
      Path stagedMount = null; // where a stage mounted the volume, the source of a real mount
      if (script.hasNodeCapability(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME)) {
        if (r.getStagingTargetPath().isEmpty()) {
          throw Status.FAILED_PRECONDITION.withDescription(
              "staging_target_path is required: this plugin has STAGE_UNSTAGE_VOLUME").asRuntimeException();
        }
        if (!v.stagedAt.contains(r.getStagingTargetPath())) {
          throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id + " is not staged at "
              + r.getStagingTargetPath()).asRuntimeException();
        }
        if (realMounts != null && !block) {
          stagedMount = Path.of(r.getStagingTargetPath());
          realMounts.requireStaged(v, stagedMount);
        }
      }
      Boolean readonly = v.publishedAt.get(r.getTargetPath());
      if (readonly != null && readonly != r.getReadonly()) {
        throw Status.ALREADY_EXISTS.withDescription("volume " + v.id + " is already published at "
            + r.getTargetPath() + " with readonly=" + readonly).asRuntimeException();
      }
      Path target = Path.of(r.getTargetPath());
      createTarget(target, block);
      boolean mounted = realMounts != null && realMounts.publish(v, stagedMount, target, block, r.getReadonly());
      v.publishedAt.put(r.getTargetPath(), r.getReadonly());
      persistOrUnmount(mounted, r.getTargetPath());
      recordOnCloud(SharedCloud.NodeUse.PUBLISHED, v.id, r.getTargetPath(), true);
    }
    return NodePublishVolumeResponse.getDefaultInstance();
  }

  NodeUnpublishVolumeResponse nodeUnpublish(NodeUnpublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("target_path", r.getTargetPath());
    synchronized (driver.lock()) {
      MockVolume v = driver.findVolume(r.getVolumeId());
      if (v != null && v.publishedAt.containsKey(r.getTargetPath())) {
        Path target = Path.of(r.getTargetPath());
        if (realMounts != null) {
          realMounts.unmount(v, target); // failing: still published
        }
        // Forgotten before the target goes, so a crash between the two leaves a stray directory,
        // not a volume published at a path that no longer exists.
        v.publishedAt.remove(r.getTargetPath());
        driver.persistLocked();
        removeTarget(target);
      }
      // Also when this process does not know it (restarted without a state file): the node has it no longer.
      recordOnCloud(SharedCloud.NodeUse.PUBLISHED, r.getVolumeId(), r.getTargetPath(), false);
    }
    return NodeUnpublishVolumeResponse.getDefaultInstance();
  }

  NodeGetVolumeStatsResponse nodeGetVolumeStats(NodeGetVolumeStatsRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("volume_path", r.getVolumePath());
    synchronized (driver.lock()) {
      MockVolume v = volumeAt(r.getVolumeId(), r.getVolumePath());
      long used = realMounts != null ? Math.min(realMounts.usedBytes(v.id), v.capacity) : 0;
      return NodeGetVolumeStatsResponse.newBuilder()
          .addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES)
              .setTotal(v.capacity).setUsed(used).setAvailable(v.capacity - used))
          .setVolumeCondition(healthy())
          .build();
    }
  }

  NodeExpandVolumeResponse nodeExpand(NodeExpandVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("volume_path", r.getVolumePath());
    synchronized (driver.lock()) {
      MockVolume v = volumeAt(r.getVolumeId(), r.getVolumePath());
      long required = r.getCapacityRange().getRequiredBytes();
      if (required > v.capacity) {
        v.capacity = required;
        driver.persistLocked();
      }
      return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(v.capacity).build();
    }
  }

  /**
   * Under the lock, after a stage, unstage, publish or unpublish was saved: tells the shared cloud's oracle, if there
   * is one, what this node ({@code NodeGetInfo}'s node id) now holds.
   */
  private void recordOnCloud(SharedCloud.NodeUse use, String volumeId, String path, boolean on) {
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      cloud.recordNodeUse(use, volumeId, script.nodeInfo().getNodeId(), path, on);
    }
  }

  /** Under the lock: the volume, which must be published or staged at {@code path} (else NOT_FOUND). */
  private MockVolume volumeAt(String volumeId, String path) {
    MockVolume v = driver.volume(volumeId);
    if (!v.publishedAt.containsKey(path) && !v.stagedAt.contains(path)) {
      throw notFound("volume " + v.id + " is not published or staged at " + path);
    }
    return v;
  }

  /**
   * Under the lock, after a change: saves it; if the save fails, the mount this call made (if
   * {@code mounted}) is undone too, so that a failed call changes nothing.
   */
  private void persistOrUnmount(boolean mounted, String path) {
    try {
      driver.persistLocked();
    } catch (RuntimeException e) {
      if (mounted) {
        realMounts.unmountQuietly(Path.of(path));
      }
      throw e;
    }
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
