package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.VolumeCondition;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import io.grpc.Status;
import java.io.IOException;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The storage behind the mock plugin's Controller and Node services: a complete CSI driver whose
 * volumes and snapshots live in memory, following the CSI spec v1.12.0's error codes and
 * idempotency rules (csi-sanity passes against it).
 *
 * <p>This class is what the driver knows: its volumes ({@link MockVolume}, with their controller publications,
 * stages and publishes) and snapshots ({@link MockSnapshot}), and the ids it hands out. The calls are its sides,
 * {@link DriverController} (volumes: create, delete, publish to a node, expand, modify),
 * {@link DriverInventory} (list, get, validate), {@link DriverSnapshots} and {@link DriverNode} (stage and publish
 * on this node), all over this state (and the shared cloud's, if there is one).
 *
 * <p>By default nothing is mounted: NodePublishVolume creates the target path the spec asks the
 * plugin to create (a directory for a mount volume, a file for a block volume) and
 * NodeUnpublishVolume removes it; staging is bookkeeping only. With {@link RealMounts} each volume
 * has its data in a directory (or, for a block volume, a file) that stage and publish bind-mount,
 * and DeleteVolume removes it. The only node this controller knows is its own
 * (NodeGetInfo's node id). Thread-safe: every operation runs under one lock ({@link #lock()}),
 * quickly (with real mounts, a Node call also waits for its mount or umount); handlers call it on
 * the event loop. The methods below "under the lock" must only be
 * called holding it.
 *
 * <p>Like a cloud, with or without a shared one ({@link DriverSettings}): a snapshot's cut takes time and it is
 * ready some time after; snapshots may depend on their volumes; volumes have the mutable parameters it accepts;
 * pools limit where they go. Volumes' bytes ({@link DiskData}) are copied by snapshot, restore and clone; what a
 * volume was made for, its mutable parameters and pool are kept with a shared cloud, and in memory only without.
 *
 * <p>With a {@link DriverStateFile}, volumes (with their controller publications, stages and
 * publishes) and snapshots are saved after every change, before the call is answered, and loaded
 * by {@link #loadState()}: a driver killed and started again on the same file knows what it knew.
 */
final class InMemoryDriver {

  private final Object lock = new Object();
  // Guarded by lock; insertion order is creation order, which pagination tokens index into.
  private final Map<String, MockVolume> volumes = new LinkedHashMap<>();
  private final Map<String, MockSnapshot> snapshots = new LinkedHashMap<>();
  private long nextId = 1;
  /** What a new volume's id starts with ({@code vol-} by default; a cloud's form, with {@code /}, for tests). */
  private volatile String volumeIdPrefix = "vol-";
  /** Where the state is saved after each change; null: in memory only. */
  private final DriverStateFile stateFile;
  /** The image last saved (guarded by lock): the file's content, and what a failed save rolls back to. */
  private DriverStateFile.Image savedImage = DriverStateFile.Image.EMPTY;
  private String savedText = DriverStateFile.encode(DriverStateFile.Image.EMPTY);
  /** Where volumes' data is, and the kernel's mounts of it; null: nothing is mounted. */
  private final RealMounts realMounts;
  private final DriverController controller;
  private final DriverInventory inventory;
  private final DriverSnapshots snapshotCalls;
  private final DriverNode node;

  InMemoryDriver(Script script, Clock clock) {
    this(script, clock, null, null);
  }

  /**
   * @param script the node id and node capabilities the calls follow
   * @param clock the creation time of snapshots
   * @param stateFile where to keep the state across restarts; null for memory only
   * @param realMounts where volumes' data is, to be mounted by stage and publish; null to mount
   *     nothing
   */
  InMemoryDriver(Script script, Clock clock, DriverStateFile stateFile, RealMounts realMounts) {
    this.stateFile = stateFile;
    this.realMounts = realMounts;
    this.data = realMounts != null ? new DiskData(realMounts.dataDir()) : null;
    this.controller = new DriverController(this, script, clock);
    this.inventory = new DriverInventory(this, controller);
    this.snapshotCalls = new DriverSnapshots(this, clock);
    this.node = new DriverNode(this, script, realMounts);
  }

  /** The Controller calls over this state. */
  DriverController controller() {
    return controller;
  }

  /** ListVolumes, ControllerGetVolume and ValidateVolumeCapabilities over this state (or the cloud). */
  DriverInventory inventory() {
    return inventory;
  }

  /** The snapshot calls over this state (or the cloud). */
  DriverSnapshots snapshotCalls() {
    return snapshotCalls;
  }

  /** The Node calls over this state. */
  DriverNode node() {
    return node;
  }

  /** The lock every read and change of the state holds. */
  Object lock() {
    return lock;
  }

  /**
   * Before the plugin serves, with real mounts: checks that it may mount and creates the data
   * directory. A no-op without them.
   *
   * @throws IOException naming the option if the process is not root, or naming the directory
   */
  void prepareRealMounts() throws IOException {
    if (realMounts != null) {
      realMounts.prepare();
    }
  }

  // ---- state file ---------------------------------------------------------------------------

  /**
   * Replaces the state in memory with the state file's (empty if the file does not exist yet).
   * A no-op without a state file.
   *
   * @throws IOException naming the file (and line) if it cannot be read or is malformed
   */
  void loadState() throws IOException {
    if (stateFile == null) {
      return;
    }
    DriverStateFile.Image image = stateFile.load();
    synchronized (lock) {
      restoreLocked(image);
      savedImage = image;
      savedText = DriverStateFile.encode(image);
    }
  }

  /**
   * Under the lock, after a change: saves the state if it differs from the file's. If the save
   * fails, memory goes back to the saved state and the call fails INTERNAL: what the driver
   * answers is always what a restarted driver would know.
   */
  void persistLocked() {
    if (stateFile == null) {
      return;
    }
    DriverStateFile.Image image = imageLocked();
    String text = DriverStateFile.encode(image);
    if (text.equals(savedText)) {
      return;
    }
    try {
      stateFile.save(text);
    } catch (IOException e) {
      restoreLocked(savedImage);
      throw Status.INTERNAL.withDescription("mock driver cannot save its state to " + stateFile.path() + ": " + e)
          .asRuntimeException();
    }
    savedImage = image;
    savedText = text;
  }

  private DriverStateFile.Image imageLocked() {
    List<DriverStateFile.StoredVolume> vs = new ArrayList<>();
    for (MockVolume v : volumes.values()) {
      // Copies in the same order, so that equal states encode to equal text.
      vs.add(new DriverStateFile.StoredVolume(v.id, v.name, v.capacity, v.source,
          new LinkedHashMap<>(v.publishedTo), new LinkedHashSet<>(v.stagedAt), new LinkedHashMap<>(v.publishedAt)));
    }
    List<DriverStateFile.StoredSnapshot> ss = new ArrayList<>();
    for (MockSnapshot snap : snapshots.values()) {
      ss.add(new DriverStateFile.StoredSnapshot(snap.id(), snap.name(), snap.sourceVolumeId(), snap.size(),
          snap.created()));
    }
    return new DriverStateFile.Image(nextId, List.copyOf(vs), List.copyOf(ss));
  }

  private void restoreLocked(DriverStateFile.Image image) {
    volumes.clear();
    snapshots.clear();
    for (DriverStateFile.StoredVolume sv : image.volumes()) {
      MockVolume v = new MockVolume(sv.id(), sv.name(), sv.capacity(), sv.source());
      v.publishedTo.putAll(sv.publishedTo());
      v.stagedAt.addAll(sv.stagedAt());
      v.publishedAt.putAll(sv.publishedAt());
      volumes.put(v.id, v);
    }
    for (DriverStateFile.StoredSnapshot ss : image.snapshots()) {
      snapshots.put(ss.id(), new MockSnapshot(ss.id(), ss.name(), ss.sourceVolumeId(), ss.size(), ss.created()));
    }
    nextId = image.nextId();
  }

  // ---- under the lock ------------------------------------------------------------------------

  /** The volume with this id; NOT_FOUND if there is none. */
  MockVolume volume(String id) {
    MockVolume v = volumes.get(id);
    SharedCloud c = cloud;
    if (v == null && c != null) {
      // A disk another plugin process made: known here once the cloud has it.
      java.util.Optional<SharedCloud.Disk> disk = c.find(id);
      if (disk.isPresent()) {
        v = addVolume(id, disk.get().name().isEmpty() ? id : disk.get().name(), disk.get().capacity(),
            disk.get().source());
      }
    }
    if (v == null) {
      throw DriverChecks.notFound("volume '" + id + "' does not exist");
    }
    return v;
  }

  /** The volume with this id, or null. */
  MockVolume findVolume(String id) {
    return volumes.get(id);
  }

  /** The volume with this name, or null. */
  MockVolume findVolumeByName(String name) {
    for (MockVolume v : volumes.values()) {
      if (v.name.equals(name)) {
        return v;
      }
    }
    return null;
  }

  /** Every volume, in creation order; a live view. */
  Collection<MockVolume> volumes() {
    return volumes.values();
  }

  /** The cloud shared with other plugin processes, or null. */
  private volatile SharedCloud cloud;

  void cloud(SharedCloud cloud) {
    this.cloud = cloud;
  }

  SharedCloud cloud() {
    return cloud;
  }

  void volumeIdPrefix(String prefix) {
    this.volumeIdPrefix = prefix;
  }

  /** A new volume with the next id; not saved yet. */
  MockVolume addVolume(String name, long capacity, VolumeContentSource source) {
    String id = volumeIdPrefix + (nextId++);
    MockVolume v = new MockVolume(id, name, capacity, source);
    volumes.put(id, v);
    return v;
  }

  /** A volume with an id given elsewhere (the shared cloud's); not saved yet. */
  MockVolume addVolume(String id, String name, long capacity, VolumeContentSource source) {
    MockVolume v = new MockVolume(id, name, capacity, source);
    volumes.put(id, v);
    return v;
  }

  String volumeIdPrefix() {
    return volumeIdPrefix;
  }

  /** How long a CreateVolume takes before it answers (the volume exists from its start). */
  private volatile java.time.Duration createTime = java.time.Duration.ZERO;

  void createTime(java.time.Duration d) {
    this.createTime = d;
  }

  java.time.Duration createTime() {
    return createTime;
  }

  void removeVolume(String id) {
    volumes.remove(id);
  }

  /** After a deleted volume is saved as gone: its data, with real mounts, goes too. */
  void deleteVolumeData(String id) {
    if (realMounts != null) {
      realMounts.deleteData(id);
    }
  }

  /** After a deleted snapshot is saved as gone: its bytes go too. */
  void deleteSnapshotData(String id) {
    if (data != null) {
      data.deleteSnapshot(id);
    }
  }

  /** The bytes all volumes take together. */
  long usedBytes() {
    long used = 0;
    for (MockVolume v : volumes.values()) {
      used += v.capacity;
    }
    return used;
  }

  /** The snapshot with this id, or null. */
  MockSnapshot findSnapshot(String id) {
    return snapshots.get(id);
  }

  /** Every snapshot, in creation order; a live view. */
  Collection<MockSnapshot> snapshots() {
    return snapshots.values();
  }

  /**
   * A new snapshot of {@code source} with the next id, as large as the volume is now, cut {@link #snapshotCut} after
   * {@code created} and ready {@link #snapshotReady} after that; its bytes copied ({@link #data}); not saved yet.
   */
  MockSnapshot addSnapshot(String name, MockVolume source, Instant created) {
    Instant cut = created.plus(settings.snapshotCut());
    MockSnapshot s = new MockSnapshot("snap-" + (nextId++), name, source.id, source.capacity, created, cut,
        cut.plus(settings.snapshotReady()));
    snapshots.put(s.id(), s);
    if (data != null) {
      data.snapshot(source.id, s.id());
    }
    return s;
  }

  /** The cloud-like behaviours' settings (snapshot times, dependent snapshots, mutable parameters, pools). */
  private final DriverSettings settings = new DriverSettings();

  DriverSettings settings() {
    return settings;
  }

  /** Where volumes' and snapshots' bytes are without a cloud: the real-mounts directory; null without one. */
  private final DiskData data;

  /** The bytes' place: the cloud's if there is one, else {@link #data} (null: nowhere, nothing is copied). */
  DiskData diskData() {
    SharedCloud c = cloud;
    return c != null ? c.data() : data;
  }

  /** What the volumes of each pool take (without a cloud). */
  Map<String, Long> usedByPool() {
    Map<String, Long> used = new LinkedHashMap<>();
    for (MockVolume v : volumes.values()) {
      if (!v.pool.isEmpty()) {
        used.merge(v.pool, v.capacity, Long::sum);
      }
    }
    return used;
  }

  void removeSnapshot(String id) {
    snapshots.remove(id);
  }

  static VolumeCondition healthy() {
    return VolumeCondition.newBuilder().setAbnormal(false).setMessage("volume is healthy").build();
  }

  // ---- what the node holds, for tests ---------------------------------------------------------

  /** Volume id -> the staging paths it is staged at now (only volumes staged somewhere); a copy. */
  Map<String, Set<String>> stagedPaths() {
    synchronized (lock) {
      Map<String, Set<String>> out = new java.util.TreeMap<>();
      volumes.forEach((id, v) -> {
        if (!v.stagedAt.isEmpty()) {
          out.put(id, Set.copyOf(v.stagedAt));
        }
      });
      return out;
    }
  }

  /** Volume id -> the target paths it is published at now (only volumes published somewhere); a copy. */
  Map<String, Set<String>> publishedPaths() {
    synchronized (lock) {
      Map<String, Set<String>> out = new java.util.TreeMap<>();
      volumes.forEach((id, v) -> {
        if (!v.publishedAt.isEmpty()) {
          out.put(id, Set.copyOf(v.publishedAt.keySet()));
        }
      });
      return out;
    }
  }
}
