package dev.csisupervisor.volumes;

import dev.csisupervisor.client.VolumeCapability;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What this node has done with one volume of one plugin, as the state store holds it (key
 * {@code volume/<plugin>/<volume>}): the controller publication to this node, and per usage its
 * staging state and the allocations it is published to, each with the phase of its operation. A
 * phase other than {@code PUBLISHED} (or a stage or controller publication nothing uses any more)
 * is an operation in flight or interrupted: {@link #hasWork()}. Carries no secret and no mount
 * flag. Immutable.
 *
 * @param pluginId the node plugin
 * @param volumeId the volume
 * @param pluginDir the plugin's directory under the CSI root, where staging and target paths live
 * @param controller this agent's ControllerPublishVolume of the volume to this node
 * @param controllerNodeId the node id it was published to ({@code ""} if none)
 * @param publishContext what the controller publication returned (or the claim brought)
 * @param usages per usage, its staging state and allocations
 */
public record VolumeRecord(String pluginId, String volumeId, Path pluginDir, ControllerState controller,
    String controllerNodeId, Map<String, String> publishContext, SortedMap<VolumeUsage, UsageRecord> usages) {

  /** Usages in a stable order: by directory name. */
  static final Comparator<VolumeUsage> USAGE_ORDER = Comparator.comparing(VolumeUsage::dirName);

  /** This agent's controller publication of the volume to this node. */
  public enum ControllerState {
    /** Not published by this agent (no controller plugin, or a scheduler did it). */
    NONE,
    /** ControllerPublishVolume sent (or about to be); not confirmed. */
    PUBLISHING,
    /** ControllerPublishVolume succeeded. */
    PUBLISHED
  }

  /** A usage's staging. */
  public enum StageState {
    /** The plugin does not stage (no {@code STAGE_UNSTAGE_VOLUME}). */
    NOT_STAGED,
    /** NodeStageVolume sent (or about to be); not confirmed. */
    STAGING,
    /** NodeStageVolume succeeded. */
    STAGED
  }

  /** An allocation's publication. */
  public enum AllocPhase {
    /** NodePublishVolume sent (or about to be); not confirmed: rolled back if interrupted. */
    PUBLISHING,
    /** Mounted for the allocation. */
    PUBLISHED,
    /** Unmount decided: NodeUnpublishVolume (and unstage at the last use) until done. */
    UNPUBLISHING
  }

  /**
   * One usage of the volume.
   *
   * @param usage the usage
   * @param capability its capability, without mount flags
   * @param stage its staging state
   * @param allocs the allocations it is published to, with their phase
   */
  public record UsageRecord(VolumeUsage usage, VolumeCapability capability, StageState stage,
      SortedMap<String, AllocPhase> allocs) {
    public UsageRecord {
      Objects.requireNonNull(usage, "usage");
      capability = Objects.requireNonNull(capability, "capability").withoutMountFlags();
      Objects.requireNonNull(stage, "stage");
      allocs = Collections.unmodifiableSortedMap(new TreeMap<>(allocs));
    }

    UsageRecord withAlloc(String allocId, AllocPhase phase) {
      TreeMap<String, AllocPhase> a = new TreeMap<>(allocs);
      a.put(allocId, phase);
      return new UsageRecord(usage, capability, stage, a);
    }

    UsageRecord withoutAlloc(String allocId) {
      TreeMap<String, AllocPhase> a = new TreeMap<>(allocs);
      a.remove(allocId);
      return new UsageRecord(usage, capability, stage, a);
    }

    UsageRecord withStage(StageState stage) {
      return new UsageRecord(usage, capability, stage, allocs);
    }

    boolean hasPublished() {
      return allocs.containsValue(AllocPhase.PUBLISHED);
    }
  }

  public VolumeRecord {
    VolumeIds.checkPlugin(pluginId);
    VolumeIds.check("volumeId", volumeId);
    Objects.requireNonNull(pluginDir, "pluginDir");
    Objects.requireNonNull(controller, "controller");
    Objects.requireNonNull(controllerNodeId, "controllerNodeId");
    publishContext = Collections.unmodifiableSortedMap(new TreeMap<>(publishContext));
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    usages = Collections.unmodifiableSortedMap(u);
  }

  static VolumeRecord empty(VolumeKey key, Path pluginDir) {
    return new VolumeRecord(key.pluginId(), key.volumeId(), pluginDir, ControllerState.NONE, "", Map.of(),
        new TreeMap<>(USAGE_ORDER));
  }

  VolumeKey key() {
    return new VolumeKey(pluginId, volumeId);
  }

  /** {@code <pluginDir>/staging/<volume>/<usage>}: where the volume is staged for {@code usage}. */
  public Path stagingPath(VolumeUsage usage) {
    return pluginDir.resolve("staging").resolve(volumeId).resolve(usage.dirName());
  }

  /** {@code <pluginDir>/per-alloc/<alloc>/<volume>/<usage>}: where it is published for the allocation. */
  public Path targetPath(String allocId, VolumeUsage usage) {
    return pluginDir.resolve("per-alloc").resolve(allocId).resolve(volumeId).resolve(usage.dirName());
  }

  /** Whether an operation is in flight or was interrupted: something is not in its final state. */
  public boolean hasWork() {
    for (UsageRecord u : usages.values()) {
      if (u.stage() == StageState.STAGING || (u.stage() == StageState.STAGED && u.allocs().isEmpty())) {
        return true;
      }
      if (u.allocs().values().stream().anyMatch(p -> p != AllocPhase.PUBLISHED)) {
        return true;
      }
    }
    return controller == ControllerState.PUBLISHING || (controller == ControllerState.PUBLISHED && usages.isEmpty());
  }

  /** Whether nothing is left: the record can be deleted. */
  boolean isEmpty() {
    return usages.isEmpty() && controller == ControllerState.NONE;
  }

  /** The allocations the volume is published (or being published or unpublished) to, over all usages. */
  public List<String> allocs() {
    return usages.values().stream().flatMap(u -> u.allocs().keySet().stream()).distinct().sorted().toList();
  }

  /** The allocation's usage, if the volume is (being) published to it. */
  Optional<UsageRecord> usageOf(String allocId) {
    return usages.values().stream().filter(u -> u.allocs().containsKey(allocId)).findFirst();
  }

  VolumeRecord withUsage(UsageRecord usage) {
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    u.put(usage.usage(), usage);
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, u);
  }

  VolumeRecord withoutUsage(VolumeUsage usage) {
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    u.remove(usage);
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, u);
  }

  VolumeRecord withController(ControllerState state, String nodeId, Map<String, String> publishContext) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, state, nodeId, publishContext, usages);
  }
}
