package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.TopologyRequirement;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.mockplugin.CloudFile.Snap;
import dev.csisupervisor.mockplugin.CloudFile.State;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * A "cloud" several mock plugin processes share ({@code --cloud FILE}): which disks exist, what each was made from,
 * for and in, to which nodes each is attached, and its snapshots ({@link CloudSnapshots}), in one file every change
 * reads and writes under an exclusive file lock ({@link CloudFile}, which documents the lines), so plugin processes
 * on the same machine see one cloud. A controller of any process attaches a disk to any node; a disk attached with a
 * single-node access mode is refused a second node ({@code FAILED_PRECONDITION}, as a cloud refuses to attach a disk
 * that is in use), so a double attachment cannot go unnoticed; an attach takes the scripted attach time. A node
 * plugin stages a disk it has never seen if the cloud has it attached to its node.
 *
 * <p>Disks have names: a CreateVolume by a name the cloud has (made by any process) answers that disk, so a create
 * sent again through another plugin process after its first sender died makes no second disk; restored and cloned
 * disks alike. The cloud hands out the ids ({@code next}), so two processes never make the same id. A disk's bytes
 * live beside the file ({@link DiskData}, {@code FILE.data}): a snapshot copies them, a restore or clone copies them
 * into the new disk. An operator (or a test) marks a disk abnormal or removes it behind the CO's back
 * ({@code csi-mock-plugin cloud-mark-abnormal} / {@code cloud-remove}); ListVolumes and ControllerGetVolume answer
 * that.
 *
 * <p>The oracle ({@link CloudOracle}) counts in the same file what a correct CO never does. Thread-safe (the lock is
 * the file's).
 */
final class SharedCloud {
  private final CloudFile file;
  private final Duration attachTime;
  private final DiskData data;
  private final CloudOracle oracle;
  private final CloudSnapshots snapshots;

  SharedCloud(Path file, Duration attachTime) {
    this.file = new CloudFile(file);
    this.attachTime = attachTime;
    this.data = DiskData.besideCloud(this.file.path());
    this.oracle = new CloudOracle(this.file);
    this.snapshots = new CloudSnapshots(this.file, data);
  }

  Path file() {
    return file.path();
  }

  /** Where the disks' and snapshots' bytes are. */
  DiskData data() {
    return data;
  }

  CloudSnapshots snapshots() {
    return snapshots;
  }

  CloudOracle oracle() {
    return oracle;
  }

  /**
   * A disk of the cloud.
   *
   * @param name its CreateVolume name ("" if it was made without one)
   * @param source what it was restored or cloned from, or null
   * @param pool the {@link Pools pool} it was made in, or ""
   * @param capabilities each "mount MODE" / "block MODE" (access mode number) its create asked; empty: unknown
   * @param mutable its mutable parameters now
   * @param abnormal why it is marked abnormal, or null
   */
  record Disk(String id, long capacity, String name, VolumeContentSource source, String pool,
      Set<String> capabilities, Map<String, String> mutable, String abnormal) {}

  static Disk disk(State s, String id) {
    String[] src = s.sources.get(id);
    return new Disk(id, s.disks.getOrDefault(id, 0L), s.names.getOrDefault(id, ""),
        src == null ? null : CloudSnapshots.source(src[0], src[1]), s.pools.getOrDefault(id, ""),
        Set.copyOf(s.capabilities.getOrDefault(id, Set.of())), Map.copyOf(s.mutable.getOrDefault(id, Map.of())),
        s.abnormal.get(id));
  }

  /** A disk made by a controller of one of the processes, outside {@link #create}. */
  void addDisk(String id, long capacity) {
    file.locked(s -> s.disks.put(id, capacity));
  }

  /**
   * What a CreateVolume asks of the cloud.
   *
   * @param required CSI's required_bytes (0: none)
   * @param limit CSI's limit_bytes (0: none)
   * @param source what to restore or clone it from, or null
   * @param requirements its accessibility requirements, or null
   * @param pools the pools to make it in ({@link Pools#NONE}: none, the cloud's total applies)
   */
  record NewDisk(String name, long required, long limit, VolumeContentSource source, Set<String> capabilities,
      Map<String, String> mutable, TopologyRequirement requirements, Pools pools, String idPrefix) {}

  /**
   * The disk of {@code d.name()}, made now if the cloud has none by that name: as large as asked (without a size,
   * its source's, else {@link DriverController#DEFAULT_VOLUME_BYTES}), in a pool with room, with its source's bytes.
   *
   * @return the disk, and whether it was made now
   * @throws io.grpc.StatusRuntimeException NOT_FOUND: no such source; FAILED_PRECONDITION: the source snapshot is not
   *     ready to use; OUT_OF_RANGE: the source is larger than limit_bytes, or the cloud is full (no pools);
   *     RESOURCE_EXHAUSTED: no pool it may go to has room
   */
  Map.Entry<Disk, Boolean> create(NewDisk d, long nowMs) {
    return file.locked(s -> {
      Optional<String> existing = s.diskNamed(d.name());
      if (existing.isPresent()) {
        return Map.entry(disk(s, existing.get()), false);
      }
      long sourceSize = d.source() == null ? 0 : CloudSnapshots.sourceSize(s, d.source(), nowMs);
      long capacity = d.required() > 0 ? Math.max(d.required(), sourceSize)
          : sourceSize > 0 ? sourceSize
          : d.limit() > 0 ? Math.min(d.limit(), DriverController.DEFAULT_VOLUME_BYTES)
          : DriverController.DEFAULT_VOLUME_BYTES;
      if (d.limit() > 0 && capacity > d.limit()) {
        throw Status.OUT_OF_RANGE.withDescription("the source is " + sourceSize + " bytes, more than limit_bytes "
            + d.limit()).asRuntimeException();
      }
      String pool = "";
      if (!d.pools().isEmpty()) {
        pool = d.pools().choose(d.requirements(), capacity, usedByPool(s));
      } else if (capacity > DriverController.TOTAL_CAPACITY_BYTES - s.disks.values().stream()
          .mapToLong(Long::longValue).sum()) {
        throw Status.OUT_OF_RANGE.withDescription("not enough capacity for " + capacity + " bytes")
            .asRuntimeException();
      }
      String id = s.newId(d.idPrefix());
      s.disks.put(id, capacity);
      s.names.put(id, d.name());
      if (d.source() != null) {
        String[] src = CloudSnapshots.fields(d.source());
        s.sources.put(id, src);
        if (src[0].equals("snapshot")) {
          data.restore(src[1], id);
        } else {
          data.cloneDisk(src[1], id);
        }
      }
      if (!d.capabilities().isEmpty()) {
        s.capabilities.put(id, new LinkedHashSet<>(d.capabilities()));
      }
      if (!pool.isEmpty()) {
        s.pools.put(id, pool);
      }
      if (!d.mutable().isEmpty()) {
        s.mutable.put(id, new TreeMap<>(d.mutable()));
      }
      return Map.entry(disk(s, id), true);
    });
  }

  /** What the disks of each pool take. */
  static Map<String, Long> usedByPool(State s) {
    Map<String, Long> used = new LinkedHashMap<>();
    s.pools.forEach((id, pool) -> used.merge(pool, s.disks.getOrDefault(id, 0L), Long::sum));
    return used;
  }

  /** What the disks of each pool take now. */
  Map<String, Long> usedByPool() {
    return file.locked(SharedCloud::usedByPool);
  }

  /** The disk of this name, if the cloud has one. */
  Optional<Disk> diskNamed(String name) {
    return file.locked(s -> s.diskNamed(name).map(id -> disk(s, id)));
  }

  /** The disk of this id, if the cloud has it. */
  Optional<Disk> find(String id) {
    return file.locked(s -> s.disks.containsKey(id) ? Optional.of(disk(s, id)) : Optional.empty());
  }

  /** Every disk, in the file's order. */
  List<Disk> disks() {
    return file.locked(s -> s.disks.keySet().stream().map(id -> disk(s, id)).toList());
  }

  /** Disk id -> the nodes it is attached to (only disks attached somewhere). */
  Map<String, Set<String>> attachments() {
    return file.locked(s -> {
      Map<String, Set<String>> out = new LinkedHashMap<>();
      s.attached.forEach((id, nodes) -> out.put(id, new LinkedHashSet<>(nodes.keySet())));
      return out;
    });
  }

  /** The name the disk was made with, or its id if none. */
  String nameOf(String id) {
    return file.locked(s -> s.names.getOrDefault(id, id));
  }

  /** Forgets the disk (an operator's {@code cloud-remove}, a test's), and its bytes. */
  void removeDisk(String id) {
    file.locked(s -> {
      s.removeDisk(id);
      return null;
    });
    data.deleteDisk(id);
  }

  /**
   * DeleteVolume's part: forgets the disk and its bytes; nothing for a disk the cloud does not have.
   *
   * @param dependentSnapshots whether a disk with snapshots is kept ({@code --dependent-snapshots})
   * @throws io.grpc.StatusRuntimeException FAILED_PRECONDITION naming the nodes it is attached to, or (with
   *     {@code dependentSnapshots}) the snapshots of it
   */
  void deleteDisk(String id, boolean dependentSnapshots) {
    file.locked(s -> {
      Set<String> on = s.attached.getOrDefault(id, Map.of()).keySet();
      if (!on.isEmpty()) {
        // As a cloud refuses to delete a disk that is attached (a volume in use: CSI's FAILED_PRECONDITION).
        throw Status.FAILED_PRECONDITION.withDescription("disk '" + id + "' is attached to node(s) " + on
            + "; detach it first").asRuntimeException();
      }
      List<String> snaps = s.snapshots.values().stream().filter(x -> x.source().equals(id)).map(Snap::id).toList();
      if (dependentSnapshots && !snaps.isEmpty()) {
        throw Status.FAILED_PRECONDITION.withDescription("disk '" + id + "' has snapshots " + snaps
            + " (dependent snapshots): delete them first").asRuntimeException();
      }
      s.removeDisk(id);
      return null;
    });
    data.deleteDisk(id);
  }

  /** The disk's capacity, if the cloud has it. */
  Optional<Long> disk(String id) {
    return file.locked(s -> Optional.ofNullable(s.disks.get(id)));
  }

  /**
   * ControllerModifyVolume's part: merges {@code mutable} into the disk's mutable parameters.
   *
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for a disk the cloud does not have
   */
  void modify(String id, Map<String, String> mutable) {
    file.locked(s -> {
      if (!s.disks.containsKey(id)) {
        throw DriverChecks.notFound("volume '" + id + "' does not exist");
      }
      s.mutable.computeIfAbsent(id, k -> new TreeMap<>()).putAll(mutable);
      return null;
    });
  }

  /** ControllerExpandVolume's part: the disk is {@code capacity} bytes now (nothing for a disk it does not have). */
  void resize(String id, long capacity) {
    file.locked(s -> s.disks.computeIfPresent(id, (k, v) -> capacity));
  }

  /**
   * Marks the disk abnormal with {@code message} (empty: healthy again).
   *
   * @throws IllegalArgumentException naming the disk if the cloud does not have it
   */
  void markAbnormal(String id, String message) {
    file.locked(s -> {
      if (!s.disks.containsKey(id)) {
        throw new IllegalArgumentException("the cloud has no disk '" + id + "' (disks: " + s.disks.keySet() + ")");
      }
      if (message.isEmpty()) {
        s.abnormal.remove(id);
      } else {
        s.abnormal.put(id, message);
      }
      return null;
    });
  }

  /**
   * Attaches the disk to {@code node} after the scripted attach time; idempotent for a node it is attached to. A
   * refused second attachment is counted ({@link CloudReport.Count#DOUBLE_ATTACH}).
   *
   * @param multiNode whether the access mode lets more than one node have it
   * @throws io.grpc.StatusRuntimeException NOT_FOUND for a disk the cloud does not have, FAILED_PRECONDITION when it
   *     is attached to another node and either attachment is single-node
   */
  void attach(String id, String node, boolean multiNode) {
    if (!attachTime.isZero()) {
      try {
        Thread.sleep(attachTime.toMillis()); // the cloud's scripted attach time, as a real attach takes
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw Status.ABORTED.withDescription("attach interrupted").asRuntimeException();
      }
    }
    Status refused = file.locked(s -> {
      if (!s.disks.containsKey(id)) {
        return Status.NOT_FOUND.withDescription("disk '" + id + "' does not exist in the cloud");
      }
      Map<String, Boolean> on = s.attached.computeIfAbsent(id, k -> new LinkedHashMap<>());
      if (!on.containsKey(node)) {
        for (Map.Entry<String, Boolean> other : on.entrySet()) {
          if (!multiNode || !other.getValue()) {
            String what = "disk '" + id + "' is attached to node '" + other.getKey()
                + "' and cannot be attached to a second node";
            CloudOracle.doubleAttach(s, what + " ('" + node + "', " + (multiNode ? "multi" : "single") + "-node)");
            return Status.FAILED_PRECONDITION.withDescription(what);
          }
        }
        on.put(node, multiNode);
      }
      return null;
    });
    if (refused != null) {
      throw refused.asRuntimeException();
    }
  }

  /**
   * Detaches the disk from {@code node} (from every node if it is empty); nothing if it was not attached. A detach
   * from a node whose plugin still has the disk staged or published is counted
   * ({@link CloudReport.Count#DETACH_IN_USE}), and done all the same, as a cloud would.
   */
  void detach(String id, String node) {
    file.locked(s -> {
      Map<String, Boolean> on = s.attached.get(id);
      if (on != null) {
        for (String n : node.isEmpty() ? List.copyOf(on.keySet()) : List.of(node)) {
          if (on.remove(n) != null) {
            CloudOracle.detached(s, id, n);
          }
        }
        if (on.isEmpty()) {
          s.attached.remove(id);
        }
      }
      return null;
    });
  }

  /** The nodes the disk is attached to. */
  Set<String> attachedTo(String id) {
    return file.locked(s -> new LinkedHashSet<>(s.attached.getOrDefault(id, Map.of()).keySet()));
  }

  /** What a node plugin does to a disk, as the oracle records it. */
  enum NodeUse { STAGED, PUBLISHED }

  /** {@link CloudOracle#recordNodeUse}. */
  void recordNodeUse(NodeUse use, String id, String node, String path, boolean on) {
    oracle.recordNodeUse(use, id, node, path, on);
  }

  /** {@link CloudOracle#controllerCall}. */
  void controllerCall(String plugin, Caller caller, String method) {
    oracle.controllerCall(plugin, caller, method);
  }

  /** {@link CloudOracle#report}. */
  CloudReport report() {
    return oracle.report();
  }

  /** The ids in the cloud made from {@code source} (restored from a snapshot or cloned from a disk). */
  static List<String> madeFrom(State s, String kind, String sourceId) {
    List<String> out = new ArrayList<>();
    s.sources.forEach((id, src) -> {
      if (src[0].equals(kind) && src[1].equals(sourceId)) {
        out.add(id);
      }
    });
    return out;
  }
}
