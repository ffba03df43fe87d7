package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.Bounds;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The half of {@link MockCsiPlugin.Builder} that says how the plugin's {@link InMemoryDriver} behaves: where it
 * keeps its state, the ids it makes, how long creates and snapshots take, a cloud shared with other processes, real
 * mounts, dependent snapshots, mutable parameters and pools. Read by {@code ScriptedPlugin} when a plugin is built.
 * Not thread-safe, as the builder.
 *
 * @param <B> the builder, returned by every setter
 */
abstract class DriverOptions<B extends DriverOptions<B>> {
  Path stateFile;
  Path realMountsDir;
  String volumeIdPrefix = "vol-";
  Path cloudFile;
  java.time.Duration cloudAttachTime = java.time.Duration.ZERO;
  java.time.Duration createTime = java.time.Duration.ZERO;
  RealMounts.UidSource uidSource = RealMounts::effectiveUid;
  java.time.Duration snapshotTime = java.time.Duration.ZERO;
  java.time.Duration snapshotReadyTime = java.time.Duration.ZERO;
  boolean dependentSnapshots;
  java.util.Set<String> mutableParameters = java.util.Set.of();
  Pools pools = Pools.NONE;
  java.time.Clock clock = java.time.Clock.systemUTC();

  /** This builder, as its own type. */
  abstract B self();

  /**
   * Keeps the in-memory driver's volumes (with their controller publications, stages and
   * publishes) and snapshots in {@code file} across restarts, as a real driver's state directory
   * does: loaded by {@link MockCsiPlugin#start()} (empty if the file does not exist yet; its
   * directory must), saved after every change before the call is answered (written aside,
   * forced, renamed over the file), so a plugin killed with SIGKILL and started again on the same
   * file knows its volumes. One plugin per file. Default: none, the state lives in memory only.
   */
  public B stateFile(Path file) {
    this.stateFile = Objects.requireNonNull(file, "stateFile").toAbsolutePath().normalize();
    return self();
  }

  /**
   * What the ids of created volumes start with (default {@code vol-}): e.g. {@code projects/p/zones/z/disks/}
   * for ids like a cloud's, with {@code /} in them (CSI allows any id up to 128 bytes).
   */
  public B volumeIdPrefix(String prefix) {
    Objects.requireNonNull(prefix, "volumeIdPrefix");
    if (prefix.isEmpty() || prefix.indexOf('\0') >= 0 || prefix.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 127) {
      throw new IllegalArgumentException("volumeIdPrefix must be 1 to 127 bytes without NUL, got " + prefix.length()
          + " chars");
    }
    this.volumeIdPrefix = prefix;
    return self();
  }

  /**
   * How long each CreateVolume takes (default 0), as a real driver's create waits for its disk: the volume exists
   * (by name, in the cloud too) from the call's start and the answer comes after {@code time}; the same name asked
   * meanwhile in this process is ABORTED (CSI: an operation is pending for it), in another process on the same
   * cloud it is answered that disk (never a second one).
   */
  public B createTime(java.time.Duration time) {
    Objects.requireNonNull(time, "createTime");
    if (time.isNegative()) {
      throw new IllegalArgumentException("createTime must not be negative, got " + time);
    }
    this.createTime = time;
    return self();
  }

  /**
   * A "cloud" shared with other mock plugin processes through {@code file} (under a file lock): created disks go
   * there, a controller attaches a disk to any node (a single-node mode to one node only: FAILED_PRECONDITION for
   * a second), each attach taking {@code attachTime}, and a node plugin stages any disk the cloud has. The cloud
   * is also an oracle: node plugins record there what they stage and publish, and it counts what a correct CO
   * never does (a double attachment, a detach while staged or published, a controller call of a deposed
   * controller agent by its {@link Caller} headers); {@link CloudReport#read} reads it. Snapshots, restored and
   * cloned disks are the cloud's too, by name, and ListVolumes, ControllerGetVolume and ValidateVolumeCapabilities
   * see every disk of the cloud ({@link SharedCloud}).
   */
  public B cloud(Path file, java.time.Duration attachTime) {
    this.cloudFile = Objects.requireNonNull(file, "cloud").toAbsolutePath().normalize();
    Objects.requireNonNull(attachTime, "attachTime");
    if (attachTime.isNegative()) {
      throw new IllegalArgumentException("attachTime must not be negative, got " + attachTime);
    }
    this.cloudAttachTime = attachTime;
    return self();
  }

  /**
   * Real-mount mode, as kubernetes-csi hostpath: each volume's data is a directory
   * {@code volumeDataDir/<sha256 of the volume id>} (mode 0700; for a block volume, a sparse
   * file {@code <sha256>.img} of the volume's capacity), made on its first stage or publish and
   * removed by DeleteVolume. NodeStageVolume bind-mounts a mount volume's directory on the
   * staging path (which the CO creates; missing is FAILED_PRECONDITION); NodePublishVolume
   * creates the target and bind-mounts the staging path there (without STAGE_UNSTAGE_VOLUME the
   * data directory; for a block volume, its file onto a file), remounted read-only if asked.
   * Publishing a mount volume whose staging path is not a mount point is FAILED_PRECONDITION.
   * NodeUnpublishVolume and NodeUnstageVolume unmount; if umount fails (busy) the call fails
   * INTERNAL with its message and the volume stays published or staged. Whether a path is
   * mounted is read from {@code /proc/self/mountinfo}, so a mount that is already there is not
   * made twice and one that vanished (a reboot) is made again. NodeGetVolumeStats reports the
   * bytes in the data directory as used. Mounting runs {@code mount} / {@code umount} from
   * util-linux on the event loop, under the driver's lock.
   *
   * <p>With a {@link #cloud shared cloud} the volumes' data is beside the cloud file instead
   * ({@code FILE.data}, {@link DiskData}), where every plugin process on the cloud mounts the same bytes, and
   * snapshots, restores and clones copy them; {@code volumeDataDir} then only turns real mounts on.
   *
   * <p>Needs root: {@link MockCsiPlugin#start()} fails otherwise. The directory is created by
   * start if missing. Default: off, nothing is mounted.
   */
  public B realMounts(Path volumeDataDir) {
    this.realMountsDir = Objects.requireNonNull(volumeDataDir, "realMounts").toAbsolutePath().normalize();
    return self();
  }

  /**
   * How long cutting a snapshot takes (default 0): the snapshot exists (in the cloud too) from CreateSnapshot's
   * start and the answer comes when the cut is done; the same name asked meanwhile, by any process on the cloud, is
   * ABORTED (CSI: an operation is pending for it).
   */
  public B snapshotTime(java.time.Duration time) {
    this.snapshotTime = Bounds.notNegative(time, "snapshotTime");
    return self();
  }

  /**
   * How long after its cut a snapshot becomes ready to use (default 0): until then CreateSnapshot (sent again by
   * name) and ListSnapshots answer {@code ready_to_use} false, and a CreateVolume from it is FAILED_PRECONDITION.
   */
  public B snapshotReadyTime(java.time.Duration time) {
    this.snapshotReadyTime = Bounds.notNegative(time, "snapshotReadyTime");
    return self();
  }

  /**
   * Snapshots that depend on their volumes, as ZFS's: DeleteSnapshot of a snapshot with volumes restored from it,
   * and DeleteVolume of a volume with snapshots, are FAILED_PRECONDITION naming them. Default: independent.
   */
  public B dependentSnapshots() {
    this.dependentSnapshots = true;
    return self();
  }

  /**
   * The mutable parameters it accepts (CreateVolume's and ControllerModifyVolume's {@code mutable_parameters});
   * advertises MODIFY_VOLUME. Other keys are INVALID_ARGUMENT, nothing changed. Default: none, and no MODIFY_VOLUME.
   *
   * @throws IllegalArgumentException naming a blank name, or if there are none
   */
  public B mutableParameters(java.util.Collection<String> names) {
    java.util.Set<String> copy = java.util.Set.copyOf(Objects.requireNonNull(names, "mutableParameters"));
    if (copy.isEmpty() || copy.stream().anyMatch(String::isBlank)) {
      throw new IllegalArgumentException("mutableParameters must be one or more names, none blank, got " + names);
    }
    this.mutableParameters = copy;
    return self();
  }

  /**
   * Storage pools, {@code SEGMENT=SIZE,...} ({@link Pools}): each the topology segment
   * {@code topology.mock.csi.dev/pool=SEGMENT} holding SIZE bytes (a number, or with K/Ki, M/Mi, G/Gi, T/Ti). A
   * volume is made in a pool with room among those its accessibility requirements allow (none: the pool with the
   * most room), else RESOURCE_EXHAUSTED; GetCapacity answers per pool; advertises GET_CAPACITY and
   * VOLUME_ACCESSIBILITY_CONSTRAINTS. Default: no pools, one 1 TiB store (full: OUT_OF_RANGE).
   *
   * @throws IllegalArgumentException naming the malformed entry
   */
  public B pools(String spec) {
    this.pools = Pools.parse(Objects.requireNonNull(spec, "pools"));
    return self();
  }

  /** Wall clock of snapshot times and readiness; default UTC system time (processes on a cloud share it). */
  B clock(java.time.Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
    return self();
  }

  /** Where {@link #realMounts} reads the process's effective uid; tests give a fake one. */
  B uidSource(RealMounts.UidSource source) {
    this.uidSource = Objects.requireNonNull(source, "uidSource");
    return self();
  }
}
