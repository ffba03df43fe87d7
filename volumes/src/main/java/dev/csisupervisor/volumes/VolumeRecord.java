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
 * is an operation in flight or interrupted, and {@code LOST} a mount the mount table no longer has:
 * {@link #hasWork()}. Carries no secret and no mount flag (CSI: mount flags may be sensitive), at most the path
 * of a secrets file. Immutable.
 *
 * @param pluginId the node plugin
 * @param volumeId the volume
 * @param pluginDir the plugin's directory under the CSI root, where staging and target paths live
 * @param controller this agent's ControllerPublishVolume of the volume to this node
 * @param controllerNodeId the node id it was published to ({@code ""} if none)
 * @param publishContext what the controller publication returned (or the claim brought)
 * @param usages per usage, its staging state and allocations
 * @param volumeContext the claim's volume context (not secret), for a stage or publish done again
 * @param secretsFile a file of {@code key=value} secrets the plugin's calls of this volume read again when they
 *     need them (a publication done again, the controller unpublish); the path only, never the values
 * @param forced an operator forced the unmount: the agent unmounts what the node plugin cannot
 */
public record VolumeRecord(String pluginId, String volumeId, Path pluginDir, ControllerState controller,
    String controllerNodeId, Map<String, String> publishContext, SortedMap<VolumeUsage, UsageRecord> usages,
    Map<String, String> volumeContext, Optional<Path> secretsFile, boolean forced) {

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
    STAGED,
    /** Was staged, but the mount table no longer has it (a reboot): staged again before any publish. */
    LOST
  }

  /** An allocation's publication. */
  public enum AllocPhase {
    /** NodePublishVolume sent (or about to be); not confirmed: rolled back if interrupted. */
    PUBLISHING,
    /** Mounted for the allocation. */
    PUBLISHED,
    /** Unmount decided: NodeUnpublishVolume (and unstage at the last use) until done. */
    UNPUBLISHING,
    /**
     * Was published, but its target is no longer a mount (a reboot, an unmount behind the agent's back): the
     * task would write to the host's disk. Published again at the same path; the claim still holds.
     */
    LOST
  }

  /**
   * One usage of the volume.
   *
   * @param usage the usage
   * @param capability its capability, without mount flags
   * @param stage its staging state
   * @param allocs the allocations it is published to, with their phase
   * @param stagingMounted whether the staging path was a mount point after NodeStageVolume (a plugin that
   *     stages by bookkeeping alone leaves none): its absence later means the staging is lost
   * @param needsClaim whether doing the stage or publish again needs the allocation's claim: it had mount
   *     flags or secrets by value, which are never stored
   */
  public record UsageRecord(VolumeUsage usage, VolumeCapability capability, StageState stage,
      SortedMap<String, AllocPhase> allocs, boolean stagingMounted, boolean needsClaim) {
    public UsageRecord {
      Objects.requireNonNull(usage, "usage");
      capability = Objects.requireNonNull(capability, "capability").withoutMountFlags();
      Objects.requireNonNull(stage, "stage");
      allocs = Collections.unmodifiableSortedMap(new TreeMap<>(allocs));
    }

    /** A usage as the first format had it: staging not known to be a mount, redone without the claim. */
    public UsageRecord(VolumeUsage usage, VolumeCapability capability, StageState stage,
        SortedMap<String, AllocPhase> allocs) {
      this(usage, capability, stage, allocs, false, false);
    }

    UsageRecord withAlloc(String allocId, AllocPhase phase) {
      TreeMap<String, AllocPhase> a = new TreeMap<>(allocs);
      a.put(allocId, phase);
      return new UsageRecord(usage, capability, stage, a, stagingMounted, needsClaim);
    }

    UsageRecord withoutAlloc(String allocId) {
      TreeMap<String, AllocPhase> a = new TreeMap<>(allocs);
      a.remove(allocId);
      return new UsageRecord(usage, capability, stage, a, stagingMounted, needsClaim);
    }

    UsageRecord withStage(StageState stage) {
      return new UsageRecord(usage, capability, stage, allocs, stagingMounted, needsClaim);
    }

    UsageRecord withStagingMounted(boolean mounted) {
      return new UsageRecord(usage, capability, stage, allocs, mounted, needsClaim);
    }

    UsageRecord withNeedsClaim(boolean needs) {
      return new UsageRecord(usage, capability, stage, allocs, stagingMounted, needs);
    }

    boolean hasPublished() {
      return allocs.containsValue(AllocPhase.PUBLISHED);
    }

    /** The allocations in {@code phase}. */
    List<String> allocsIn(AllocPhase phase) {
      return allocs.entrySet().stream().filter(e -> e.getValue() == phase).map(Map.Entry::getKey).toList();
    }

    /** Whether it is staged, or was (staging, lost): an unstage is due when nothing uses it. */
    boolean staged() {
      return stage != StageState.NOT_STAGED;
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
    volumeContext = Collections.unmodifiableSortedMap(new TreeMap<>(volumeContext));
    Objects.requireNonNull(secretsFile, "secretsFile");
  }

  /** A record as the first format had it: no volume context, no secrets file, not forced. */
  public VolumeRecord(String pluginId, String volumeId, Path pluginDir, ControllerState controller,
      String controllerNodeId, Map<String, String> publishContext, SortedMap<VolumeUsage, UsageRecord> usages) {
    this(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages, Map.of(),
        Optional.empty(), false);
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
      if (u.stage() == StageState.STAGING || u.stage() == StageState.LOST
          || (u.stage() == StageState.STAGED && u.allocs().isEmpty())) {
        return true;
      }
      if (u.allocs().values().stream().anyMatch(p -> p != AllocPhase.PUBLISHED)) {
        return true;
      }
    }
    return controller == ControllerState.PUBLISHING || (controller == ControllerState.PUBLISHED && usages.isEmpty());
  }

  /** Whether an unstage or controller unpublish is due that waits for no allocation: the tail of an unmount. */
  boolean hasTrailingWork(VolumeUsage usage) {
    UsageRecord u = usages.get(usage);
    if (u != null && u.allocs().isEmpty() && u.staged()) {
      return true;
    }
    return usages.isEmpty() && controller != ControllerState.NONE;
  }

  /** Whether a mount the journal records is not in the mount table: something to publish again. */
  public boolean hasLost() {
    return usages.values().stream().anyMatch(u -> u.stage() == StageState.LOST || u.allocs().containsValue(AllocPhase.LOST));
  }

  /** Every path the record says may be mounted: stagings and targets. */
  List<Path> paths() {
    List<Path> paths = new java.util.ArrayList<>();
    for (UsageRecord u : usages.values()) {
      if (u.staged()) {
        paths.add(stagingPath(u.usage()));
      }
      u.allocs().keySet().forEach(a -> paths.add(targetPath(a, u.usage())));
    }
    return paths;
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
  public Optional<UsageRecord> usageOf(String allocId) {
    return usages.values().stream().filter(u -> u.allocs().containsKey(allocId)).findFirst();
  }

  VolumeRecord withUsage(UsageRecord usage) {
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    u.put(usage.usage(), usage);
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, u,
        volumeContext, secretsFile, forced);
  }

  VolumeRecord withoutUsage(VolumeUsage usage) {
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    u.remove(usage);
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, u,
        volumeContext, secretsFile, forced);
  }

  VolumeRecord withController(ControllerState state, String nodeId, Map<String, String> publishContext) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, state, nodeId, publishContext, usages, volumeContext,
        secretsFile, forced);
  }

  VolumeRecord withVolumeContext(Map<String, String> context) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        context, secretsFile, forced);
  }

  VolumeRecord withSecretsFile(Optional<Path> file) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        volumeContext, file, forced);
  }

  VolumeRecord withForced(boolean force) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        volumeContext, secretsFile, force);
  }
}
