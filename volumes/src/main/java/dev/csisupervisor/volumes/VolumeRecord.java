package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.VolumeCapability;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * {@code volume/<plugin>/<volume>}): the controller publication to this node, its staging, and per usage the
 * allocations it is published to, each with the phase of its operation. A phase other than {@code PUBLISHED}
 * (or a staging or controller publication nothing uses any more) is an operation in flight or interrupted, and
 * {@code LOST} a mount the mount table no longer has: {@link #hasWork()}. Carries no secret and no mount flag
 * (CSI: mount flags may be sensitive; only a hash of them, to compare stagings), at most the path of a secrets
 * file. Immutable.
 *
 * <p><b>Layout.</b> {@link Layout#PER_VOLUME} (this version): one staging path per volume, as the spec requires
 * ({@code <pluginDir>/staging/<id>}), targets {@code <pluginDir>/per-alloc/<alloc>/<id>/<usage>}, where
 * {@code <id>} is {@link VolumeIds#dirName the hash of the volume id}, so any id the spec allows is a path.
 * {@link Layout#PER_USAGE}: a record the previous version wrote, staged once per usage at
 * {@code staging/<volume>/<usage>}; it keeps its paths until its last unmount, so what was mounted there is
 * unmounted from there.
 *
 * @param pluginId the node plugin
 * @param volumeId the volume (as its controller named it; any id the spec allows)
 * @param pluginDir the plugin's directory under the CSI root, where staging and target paths live
 * @param controller this agent's ControllerPublishVolume of the volume to this node
 * @param controllerNodeId the node id it was published to ({@code ""} if none)
 * @param publishContext what the controller publication returned (or the claim brought)
 * @param usages per usage, its capability, staging and allocations
 * @param volumeContext the claim's volume context (not secret), for a stage or publish done again
 * @param secretsFile a file of {@code key=value} secrets the plugin's calls of this volume read again when they
 *     need them (a publication done again, the controller unpublish); the path only, never the values
 * @param forced an operator forced the unmount: the agent unmounts what the node plugin cannot
 * @param layout where the record's paths are
 * @param stagings the stagings by name under {@code staging/} (at most one with {@link Layout#PER_VOLUME})
 * @param nodeExpansion a NodeExpandVolume owed to the volume (ControllerExpandVolume answered
 *     {@code node_expansion_required} while it was not published here): the range, sent after the next
 *     NodePublishVolume of it here, then cleared. A record that holds only this ({@link #onNode()} false) is no
 *     volume on this node: it takes no slot of {@code max_volumes_per_node} and does not hold a DeleteVolume
 */
public record VolumeRecord(String pluginId, String volumeId, Path pluginDir, ControllerState controller,
    String controllerNodeId, Map<String, String> publishContext, SortedMap<VolumeUsage, UsageRecord> usages,
    Map<String, String> volumeContext, Optional<Path> secretsFile, boolean forced, Layout layout,
    SortedMap<String, Staging> stagings, Optional<CapacityRange> nodeExpansion) {

  /** Usages in a stable order: by directory name. */
  static final Comparator<VolumeUsage> USAGE_ORDER = Comparator.comparing(VolumeUsage::dirName);

  /** Where a record's staging and target paths are. */
  public enum Layout {
    /** The previous version's: {@code staging/<volume>/<usage>}, {@code per-alloc/<alloc>/<volume>/<usage>}. */
    PER_USAGE,
    /** One staging per volume: {@code staging/<hash>}, {@code per-alloc/<alloc>/<hash>/<usage>}. */
    PER_VOLUME
  }

  /**
   * A staging of the volume.
   *
   * @param state its state ({@code STAGING}, {@code STAGED} or {@code LOST}; never {@code NOT_STAGED})
   * @param mounted whether the staging path was a mount point after NodeStageVolume (a plugin that stages by
   *     bookkeeping alone leaves none): its absence later means the staging is lost
   * @param compatibility what a usage must share to use it: access type, fs type, mount group, mount flags'
   *     hash ({@link #compatibility(VolumeCapability)})
   */
  public record Staging(StageState state, boolean mounted, String compatibility) {
    public Staging {
      Objects.requireNonNull(state, "state");
      if (state == StageState.NOT_STAGED) {
        throw new IllegalArgumentException("a staging is never NOT_STAGED");
      }
      Objects.requireNonNull(compatibility, "compatibility");
    }

    Staging withState(StageState s) {
      return new Staging(s, mounted, compatibility);
    }

    Staging withMounted(boolean m) {
      return new Staging(state, m, compatibility);
    }
  }

  /**
   * What two usages of one staging must share (CSI: one staging per volume): access type, fs type, mount group
   * and mount flags, the flags as a SHA-256 (they may be sensitive, and are never stored).
   */
  static String compatibility(VolumeCapability c) {
    return c.accessType().name() + "|fs=" + c.fsType() + "|group=" + c.volumeMountGroup() + "|flags="
        + (c.mountFlags().isEmpty() ? "" : VolumeIds.sha256(String.join("\0", c.mountFlags())).substring(0, 16));
  }

  /** Which parts of two {@link #compatibility} strings differ, named as a user knows them (never a flag). */
  static String compatibilityDifference(String staged, String wanted) {
    String[] a = staged.split("\\|", -1);
    String[] b = wanted.split("\\|", -1);
    String[] names = {"access type", "fs_type", "volume_mount_group", "mount_flags"};
    java.util.List<String> out = new java.util.ArrayList<>();
    for (int i = 0; i < Math.min(a.length, b.length) && i < names.length; i++) {
      if (!a[i].equals(b[i])) {
        out.add(i == 3 ? "other mount_flags" : names[i] + " " + value(a[i]) + " (asked: " + value(b[i]) + ")");
      }
    }
    return out.isEmpty() ? "another capability" : String.join(", ", out);
  }

  private static String value(String part) {
    int eq = part.indexOf('=');
    String v = eq < 0 ? part : part.substring(eq + 1);
    return v.isEmpty() ? "(none)" : v;
  }

  /** This agent's controller publication of the volume to this node. */
  public enum ControllerState {
    /** Not published by this agent (no controller plugin, or a scheduler did it). */
    NONE,
    /** ControllerPublishVolume sent (or about to be); not confirmed. */
    PUBLISHING,
    /** ControllerPublishVolume succeeded. */
    PUBLISHED
  }

  /** A staging's state. */
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
   * @param staging the name of the staging it is published from ({@code ""}: the plugin does not stage)
   * @param allocs the allocations it is published to, with their phase
   * @param needsClaim whether doing the stage or publish again needs the allocation's claim: it had mount
   *     flags or secrets by value, which are never stored
   */
  public record UsageRecord(VolumeUsage usage, VolumeCapability capability, String staging,
      SortedMap<String, AllocPhase> allocs, boolean needsClaim) {
    public UsageRecord {
      Objects.requireNonNull(usage, "usage");
      capability = Objects.requireNonNull(capability, "capability").withoutMountFlags();
      Objects.requireNonNull(staging, "staging");
      allocs = Collections.unmodifiableSortedMap(new TreeMap<>(allocs));
    }

    UsageRecord withAlloc(String allocId, AllocPhase phase) {
      TreeMap<String, AllocPhase> a = new TreeMap<>(allocs);
      a.put(allocId, phase);
      return new UsageRecord(usage, capability, staging, a, needsClaim);
    }

    UsageRecord withoutAlloc(String allocId) {
      TreeMap<String, AllocPhase> a = new TreeMap<>(allocs);
      a.remove(allocId);
      return new UsageRecord(usage, capability, staging, a, needsClaim);
    }

    UsageRecord withNeedsClaim(boolean needs) {
      return new UsageRecord(usage, capability, staging, allocs, needs);
    }

    boolean hasPublished() {
      return allocs.containsValue(AllocPhase.PUBLISHED);
    }

    /** The allocations in {@code phase}. */
    List<String> allocsIn(AllocPhase phase) {
      return allocs.entrySet().stream().filter(e -> e.getValue() == phase).map(Map.Entry::getKey).toList();
    }

    /** Whether it is published from a staging. */
    boolean staged() {
      return !staging.isEmpty();
    }
  }

  public VolumeRecord {
    VolumeIds.checkPlugin(pluginId);
    VolumeIds.checkVolume("volumeId", volumeId);
    Objects.requireNonNull(pluginDir, "pluginDir");
    Objects.requireNonNull(controller, "controller");
    Objects.requireNonNull(controllerNodeId, "controllerNodeId");
    publishContext = Collections.unmodifiableSortedMap(new TreeMap<>(publishContext));
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    usages = Collections.unmodifiableSortedMap(u);
    volumeContext = Collections.unmodifiableSortedMap(new TreeMap<>(volumeContext));
    Objects.requireNonNull(secretsFile, "secretsFile");
    Objects.requireNonNull(layout, "layout");
    stagings = Collections.unmodifiableSortedMap(new TreeMap<>(stagings));
    Objects.requireNonNull(nodeExpansion, "nodeExpansion");
  }

  /** A record without a pending node expansion (as the versions before format 4 wrote them). */
  public VolumeRecord(String pluginId, String volumeId, Path pluginDir, ControllerState controller,
      String controllerNodeId, Map<String, String> publishContext, SortedMap<VolumeUsage, UsageRecord> usages,
      Map<String, String> volumeContext, Optional<Path> secretsFile, boolean forced, Layout layout,
      SortedMap<String, Staging> stagings) {
    this(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages, volumeContext,
        secretsFile, forced, layout, stagings, Optional.empty());
  }

  /** A new record: nothing done yet, this version's layout. */
  static VolumeRecord empty(VolumeKey key, Path pluginDir) {
    return new VolumeRecord(key.pluginId(), key.volumeId(), pluginDir, ControllerState.NONE, "", Map.of(),
        new TreeMap<>(USAGE_ORDER), Map.of(), Optional.empty(), false, Layout.PER_VOLUME, new TreeMap<>(),
        Optional.empty());
  }

  VolumeKey key() {
    return new VolumeKey(pluginId, volumeId);
  }

  /** A volume id's directory name in this version's layout: the hex SHA-256 of the id (any id the spec allows). */
  public static String directoryName(String volumeId) {
    return VolumeIds.dirName(VolumeIds.checkVolume("volumeId", volumeId));
  }

  /** The name under {@code staging/} a new usage is staged at: the volume's one ({@link Layout#PER_VOLUME}). */
  String stagingNameFor(VolumeUsage usage) {
    return layout == Layout.PER_VOLUME ? VolumeIds.dirName(volumeId) : volumeId + "/" + usage.dirName();
  }

  /** {@code <pluginDir>/staging/<name>}. */
  public Path stagingPath(String name) {
    return pluginDir.resolve("staging").resolve(name);
  }

  /** Where the usage is staged, if it is. */
  public Optional<Path> stagingPathOf(UsageRecord u) {
    return u.staged() ? Optional.of(stagingPath(u.staging())) : Optional.empty();
  }

  /** The state of the usage's staging ({@code NOT_STAGED} if it has none, or it is gone). */
  public StageState stageOf(UsageRecord u) {
    Staging s = u.staged() ? stagings.get(u.staging()) : null;
    return s == null ? StageState.NOT_STAGED : s.state();
  }

  /** {@code <pluginDir>/per-alloc/<alloc>/<id>/<usage>}: where it is published for the allocation. */
  public Path targetPath(String allocId, VolumeUsage usage) {
    String volumeDir = layout == Layout.PER_VOLUME ? VolumeIds.dirName(volumeId) : volumeId;
    return pluginDir.resolve("per-alloc").resolve(allocId).resolve(volumeDir).resolve(usage.dirName());
  }

  /** The usages published (or being published or unpublished) from staging {@code name}. */
  List<UsageRecord> usersOf(String name) {
    return usages.values().stream().filter(u -> u.staging().equals(name) && !u.allocs().isEmpty()).toList();
  }

  /** Whether an operation is in flight or was interrupted: something is not in its final state. */
  public boolean hasWork() {
    for (Map.Entry<String, Staging> s : stagings.entrySet()) {
      if (s.getValue().state() != StageState.STAGED || usersOf(s.getKey()).isEmpty()) {
        return true;
      }
    }
    for (UsageRecord u : usages.values()) {
      if (u.allocs().isEmpty() || u.allocs().values().stream().anyMatch(p -> p != AllocPhase.PUBLISHED)) {
        return true;
      }
    }
    return controller == ControllerState.PUBLISHING || (controller == ControllerState.PUBLISHED && usages.isEmpty());
  }

  /**
   * Whether an unstage of staging {@code name} (nothing publishes from it any more) or the controller unpublish
   * (nothing is left) is due: the tail of an unmount.
   */
  boolean hasTrailingWork(Optional<String> staging) {
    if (staging.isPresent() && stagings.containsKey(staging.get()) && usersOf(staging.get()).isEmpty()) {
      return true;
    }
    return usages.isEmpty() && stagings.isEmpty() && controller != ControllerState.NONE;
  }

  /** Whether a mount the journal records is not in the mount table: something to publish again. */
  public boolean hasLost() {
    return stagings.values().stream().anyMatch(s -> s.state() == StageState.LOST)
        || usages.values().stream().anyMatch(u -> u.allocs().containsValue(AllocPhase.LOST));
  }

  /** Every path the record says may be mounted: stagings and targets. */
  List<Path> paths() {
    List<Path> paths = new ArrayList<>();
    stagings.keySet().forEach(n -> paths.add(stagingPath(n)));
    for (UsageRecord u : usages.values()) {
      u.allocs().keySet().forEach(a -> paths.add(targetPath(a, u.usage())));
    }
    return paths;
  }

  /**
   * Whether the volume is on this node: published, staged or controller-published here (or an operation on it
   * is). False for a record that only owes a node expansion.
   */
  public boolean onNode() {
    return !usages.isEmpty() || !stagings.isEmpty() || controller != ControllerState.NONE;
  }

  /** Whether nothing is left: the record can be deleted. */
  boolean isEmpty() {
    return !onNode() && nodeExpansion.isEmpty();
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
        volumeContext, secretsFile, forced, layout, stagings, nodeExpansion);
  }

  VolumeRecord withoutUsage(VolumeUsage usage) {
    TreeMap<VolumeUsage, UsageRecord> u = new TreeMap<>(USAGE_ORDER);
    u.putAll(usages);
    u.remove(usage);
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, u,
        volumeContext, secretsFile, forced, layout, stagings, nodeExpansion);
  }

  VolumeRecord withStaging(String name, Staging staging) {
    TreeMap<String, Staging> s = new TreeMap<>(stagings);
    if (staging == null) {
      s.remove(name);
    } else {
      s.put(name, staging);
    }
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        volumeContext, secretsFile, forced, layout, s, nodeExpansion);
  }

  VolumeRecord withController(ControllerState state, String nodeId, Map<String, String> publishContext) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, state, nodeId, publishContext, usages, volumeContext,
        secretsFile, forced, layout, stagings, nodeExpansion);
  }

  VolumeRecord withVolumeContext(Map<String, String> context) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        context, secretsFile, forced, layout, stagings, nodeExpansion);
  }

  VolumeRecord withSecretsFile(Optional<Path> file) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        volumeContext, file, forced, layout, stagings, nodeExpansion);
  }

  VolumeRecord withForced(boolean force) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        volumeContext, secretsFile, force, layout, stagings, nodeExpansion);
  }

  /** With a node expansion pending ({@code range}), or none ({@code empty}). */
  VolumeRecord withNodeExpansion(Optional<CapacityRange> range) {
    return new VolumeRecord(pluginId, volumeId, pluginDir, controller, controllerNodeId, publishContext, usages,
        volumeContext, secretsFile, forced, layout, stagings, range);
  }
}
