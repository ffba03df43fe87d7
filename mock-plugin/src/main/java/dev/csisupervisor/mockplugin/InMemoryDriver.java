package dev.csisupervisor.mockplugin;

import com.google.protobuf.Int64Value;
import com.google.protobuf.Timestamp;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerGetVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeResponse;
import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.CreateSnapshotResponse;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeResponse;
import dev.csisupervisor.csi.v1.DeleteSnapshotRequest;
import dev.csisupervisor.csi.v1.DeleteSnapshotResponse;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeResponse;
import dev.csisupervisor.csi.v1.GetCapacityRequest;
import dev.csisupervisor.csi.v1.GetCapacityResponse;
import dev.csisupervisor.csi.v1.GetSnapshotRequest;
import dev.csisupervisor.csi.v1.GetSnapshotResponse;
import dev.csisupervisor.csi.v1.ListSnapshotsRequest;
import dev.csisupervisor.csi.v1.ListSnapshotsResponse;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
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
import dev.csisupervisor.csi.v1.Snapshot;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeCapability;
import dev.csisupervisor.csi.v1.VolumeCondition;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.csi.v1.VolumeUsage;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
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
 * <p>Nothing is mounted: NodePublishVolume creates the target path the spec asks the plugin to
 * create (a directory for a mount volume, a file for a block volume) and NodeUnpublishVolume
 * removes it; staging is bookkeeping only. The only node this controller knows is its own
 * (NodeGetInfo's node id). Thread-safe: every operation runs under one lock, quickly; handlers
 * call it on the event loop.
 *
 * <p>With a {@link DriverStateFile}, volumes (with their controller publications, stages and
 * publishes) and snapshots are saved after every change, before the call is answered, and loaded
 * by {@link #loadState()}: a driver killed and started again on the same file knows what it knew.
 */
final class InMemoryDriver {

  /** Capacity of a volume created without a capacity range. */
  static final long DEFAULT_VOLUME_BYTES = 1L << 30;
  /** Total capacity of the backing "pool", reported by GetCapacity. */
  static final long TOTAL_CAPACITY_BYTES = 1L << 40;
  /** Longest name accepted for a volume or snapshot. */
  static final int MAX_NAME_LENGTH = 128;

  private static final class VolumeState {
    final String id;
    final String name;
    long capacity;
    final VolumeContentSource source; // null if none
    /** node id -> readonly flag of its ControllerPublishVolume */
    final Map<String, Boolean> publishedTo = new LinkedHashMap<>();
    /** staging paths on this node */
    final Set<String> stagedAt = new LinkedHashSet<>();
    /** target path -> readonly */
    final Map<String, Boolean> publishedAt = new LinkedHashMap<>();

    VolumeState(String id, String name, long capacity, VolumeContentSource source) {
      this.id = id;
      this.name = name;
      this.capacity = capacity;
      this.source = source;
    }

    Volume toProto() {
      Volume.Builder v = Volume.newBuilder()
          .setVolumeId(id)
          .setCapacityBytes(capacity)
          .putVolumeContext("name", name);
      if (source != null) {
        v.setContentSource(source);
      }
      return v.build();
    }
  }

  private record SnapshotState(String id, String name, String sourceVolumeId, long size, Instant created) {
    Snapshot toProto() {
      return Snapshot.newBuilder()
          .setSnapshotId(id)
          .setSourceVolumeId(sourceVolumeId)
          .setSizeBytes(size)
          .setCreationTime(Timestamp.newBuilder()
              .setSeconds(created.getEpochSecond()).setNanos(created.getNano()))
          .setReadyToUse(true)
          .build();
    }
  }

  private final Script script;
  private final Clock clock;
  private final Object lock = new Object();
  // Guarded by lock; insertion order is creation order, which pagination tokens index into.
  private final Map<String, VolumeState> volumes = new LinkedHashMap<>();
  private final Map<String, SnapshotState> snapshots = new LinkedHashMap<>();
  private long nextId = 1;
  /** Where the state is saved after each change; null: in memory only. */
  private final DriverStateFile stateFile;
  /** The image last saved (guarded by lock): the file's content, and what a failed save rolls back to. */
  private DriverStateFile.Image savedImage = DriverStateFile.Image.EMPTY;
  private String savedText = DriverStateFile.encode(DriverStateFile.Image.EMPTY);

  InMemoryDriver(Script script, Clock clock) {
    this(script, clock, null);
  }

  /** @param stateFile where to keep the state across restarts; null for memory only */
  InMemoryDriver(Script script, Clock clock, DriverStateFile stateFile) {
    this.script = script;
    this.clock = clock;
    this.stateFile = stateFile;
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
  private void persistLocked() {
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
    for (VolumeState v : volumes.values()) {
      // Copies in the same order, so that equal states encode to equal text.
      vs.add(new DriverStateFile.StoredVolume(v.id, v.name, v.capacity, v.source,
          new LinkedHashMap<>(v.publishedTo), new LinkedHashSet<>(v.stagedAt), new LinkedHashMap<>(v.publishedAt)));
    }
    List<DriverStateFile.StoredSnapshot> ss = new ArrayList<>();
    for (SnapshotState snap : snapshots.values()) {
      ss.add(new DriverStateFile.StoredSnapshot(snap.id(), snap.name(), snap.sourceVolumeId(), snap.size(),
          snap.created()));
    }
    return new DriverStateFile.Image(nextId, List.copyOf(vs), List.copyOf(ss));
  }

  private void restoreLocked(DriverStateFile.Image image) {
    volumes.clear();
    snapshots.clear();
    for (DriverStateFile.StoredVolume sv : image.volumes()) {
      VolumeState v = new VolumeState(sv.id(), sv.name(), sv.capacity(), sv.source());
      v.publishedTo.putAll(sv.publishedTo());
      v.stagedAt.addAll(sv.stagedAt());
      v.publishedAt.putAll(sv.publishedAt());
      volumes.put(v.id, v);
    }
    for (DriverStateFile.StoredSnapshot ss : image.snapshots()) {
      snapshots.put(ss.id(), new SnapshotState(ss.id(), ss.name(), ss.sourceVolumeId(), ss.size(), ss.created()));
    }
    nextId = image.nextId();
  }

  // ---- Controller ---------------------------------------------------------------------------

  CreateVolumeResponse createVolume(CreateVolumeRequest r) {
    String name = r.getName();
    requireName("name", name);
    requireCapabilities(r.getVolumeCapabilitiesList());
    long required = r.getCapacityRange().getRequiredBytes();
    long limit = r.getCapacityRange().getLimitBytes();
    if (required < 0 || limit < 0) {
      throw invalid("capacity_range must not be negative: required_bytes=" + required
          + ", limit_bytes=" + limit);
    }
    if (limit > 0 && limit < required) {
      throw invalid("capacity_range.limit_bytes " + limit + " is less than required_bytes " + required);
    }
    synchronized (lock) {
      VolumeState existing = findVolumeByName(name);
      if (existing != null) {
        boolean fits = existing.capacity >= required && (limit == 0 || existing.capacity <= limit);
        if (!fits || !sameSource(existing.source, r)) {
          throw Status.ALREADY_EXISTS.withDescription("volume '" + name + "' already exists with "
              + existing.capacity + " bytes" + (existing.source != null ? " from " + existing.source : "")
              + ", incompatible with this request").asRuntimeException();
        }
        return CreateVolumeResponse.newBuilder().setVolume(existing.toProto()).build();
      }
      long capacity = required > 0 ? required : (limit > 0 ? Math.min(limit, DEFAULT_VOLUME_BYTES) : DEFAULT_VOLUME_BYTES);
      VolumeContentSource source = null;
      if (r.hasVolumeContentSource()) {
        source = r.getVolumeContentSource();
        switch (source.getTypeCase()) {
          case SNAPSHOT -> {
            SnapshotState snap = snapshots.get(source.getSnapshot().getSnapshotId());
            if (snap == null) {
              throw notFound("source snapshot '" + source.getSnapshot().getSnapshotId() + "' does not exist");
            }
            capacity = Math.max(capacity, snap.size());
          }
          case VOLUME -> {
            VolumeState src = volumes.get(source.getVolume().getVolumeId());
            if (src == null) {
              throw notFound("source volume '" + source.getVolume().getVolumeId() + "' does not exist");
            }
            capacity = Math.max(capacity, src.capacity);
          }
          default -> throw invalid("volume_content_source has no snapshot or volume");
        }
        if (limit > 0 && capacity > limit) {
          throw Status.OUT_OF_RANGE.withDescription("the source is " + capacity
              + " bytes, more than limit_bytes " + limit).asRuntimeException();
        }
      }
      if (capacity > TOTAL_CAPACITY_BYTES - usedLocked()) {
        throw Status.OUT_OF_RANGE.withDescription("not enough capacity for " + capacity + " bytes")
            .asRuntimeException();
      }
      String id = "vol-" + (nextId++);
      VolumeState v = new VolumeState(id, name, capacity, source);
      volumes.put(id, v);
      persistLocked();
      return CreateVolumeResponse.newBuilder().setVolume(v.toProto()).build();
    }
  }

  private static boolean sameSource(VolumeContentSource existing, CreateVolumeRequest r) {
    VolumeContentSource wanted = r.hasVolumeContentSource() ? r.getVolumeContentSource() : null;
    return existing == null ? wanted == null : existing.equals(wanted);
  }

  DeleteVolumeResponse deleteVolume(DeleteVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (lock) {
      VolumeState v = volumes.get(r.getVolumeId());
      if (v != null && (!v.publishedAt.isEmpty() || !v.stagedAt.isEmpty())) {
        throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id
            + " is still staged or published on the node").asRuntimeException();
      }
      volumes.remove(r.getVolumeId()); // unknown: already deleted, OK
      persistLocked();
    }
    return DeleteVolumeResponse.getDefaultInstance();
  }

  ControllerPublishVolumeResponse controllerPublish(ControllerPublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("node_id", r.getNodeId());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    synchronized (lock) {
      VolumeState v = volume(r.getVolumeId());
      if (!r.getNodeId().equals(nodeId())) {
        throw notFound("node '" + r.getNodeId() + "' does not exist (this plugin serves node '" + nodeId() + "')");
      }
      Boolean readonly = v.publishedTo.get(r.getNodeId());
      if (readonly != null) {
        if (readonly != r.getReadonly()) {
          throw Status.ALREADY_EXISTS.withDescription("volume " + v.id + " is already published to node "
              + r.getNodeId() + " with readonly=" + readonly).asRuntimeException();
        }
      } else {
        long max = script.nodeInfo().getMaxVolumesPerNode();
        long onNode = volumes.values().stream().filter(x -> x.publishedTo.containsKey(r.getNodeId())).count();
        if (max > 0 && onNode >= max) {
          throw Status.RESOURCE_EXHAUSTED.withDescription("node " + r.getNodeId() + " already has "
              + onNode + " volumes published, its maximum").asRuntimeException();
        }
        v.publishedTo.put(r.getNodeId(), r.getReadonly());
        persistLocked();
      }
      return ControllerPublishVolumeResponse.newBuilder()
          .putPublishContext("device", "/dev/mock/" + v.id)
          .build();
    }
  }

  ControllerUnpublishVolumeResponse controllerUnpublish(ControllerUnpublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (lock) {
      VolumeState v = volumes.get(r.getVolumeId());
      if (v != null) {
        if (r.getNodeId().isEmpty()) {
          v.publishedTo.clear(); // empty node id: from every node
        } else {
          v.publishedTo.remove(r.getNodeId());
        }
      }
      persistLocked();
    }
    return ControllerUnpublishVolumeResponse.getDefaultInstance();
  }

  ValidateVolumeCapabilitiesResponse validate(ValidateVolumeCapabilitiesRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireCapabilities(r.getVolumeCapabilitiesList());
    synchronized (lock) {
      volume(r.getVolumeId());
    }
    return ValidateVolumeCapabilitiesResponse.newBuilder()
        .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
            .putAllVolumeContext(r.getVolumeContextMap())
            .addAllVolumeCapabilities(r.getVolumeCapabilitiesList())
            .putAllParameters(r.getParametersMap()))
        .build();
  }

  ListVolumesResponse listVolumes(ListVolumesRequest r) {
    synchronized (lock) {
      List<VolumeState> all = new ArrayList<>(volumes.values());
      Page<VolumeState> page = page(all, r.getMaxEntries(), r.getStartingToken());
      ListVolumesResponse.Builder out = ListVolumesResponse.newBuilder().setNextToken(page.nextToken());
      for (VolumeState v : page.entries()) {
        out.addEntries(ListVolumesResponse.Entry.newBuilder()
            .setVolume(v.toProto())
            .setStatus(ListVolumesResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(v.publishedTo.keySet())
                .setVolumeCondition(healthy())));
      }
      return out.build();
    }
  }

  GetCapacityResponse getCapacity(GetCapacityRequest r) {
    checkCapabilities(r.getVolumeCapabilitiesList(), "volume_capabilities");
    synchronized (lock) {
      return GetCapacityResponse.newBuilder()
          .setAvailableCapacity(TOTAL_CAPACITY_BYTES - usedLocked())
          .setMaximumVolumeSize(Int64Value.of(TOTAL_CAPACITY_BYTES))
          .setMinimumVolumeSize(Int64Value.of(1))
          .build();
    }
  }

  CreateSnapshotResponse createSnapshot(CreateSnapshotRequest r) {
    requireName("name", r.getName());
    requireId("source_volume_id", r.getSourceVolumeId());
    synchronized (lock) {
      for (SnapshotState s : snapshots.values()) {
        if (s.name().equals(r.getName())) {
          if (!s.sourceVolumeId().equals(r.getSourceVolumeId())) {
            throw Status.ALREADY_EXISTS.withDescription("snapshot '" + r.getName()
                + "' already exists for volume " + s.sourceVolumeId()).asRuntimeException();
          }
          return CreateSnapshotResponse.newBuilder().setSnapshot(s.toProto()).build();
        }
      }
      VolumeState v = volume(r.getSourceVolumeId());
      SnapshotState s = new SnapshotState("snap-" + (nextId++), r.getName(), v.id, v.capacity, clock.instant());
      snapshots.put(s.id(), s);
      persistLocked();
      return CreateSnapshotResponse.newBuilder().setSnapshot(s.toProto()).build();
    }
  }

  DeleteSnapshotResponse deleteSnapshot(DeleteSnapshotRequest r) {
    requireId("snapshot_id", r.getSnapshotId());
    synchronized (lock) {
      snapshots.remove(r.getSnapshotId());
      persistLocked();
    }
    return DeleteSnapshotResponse.getDefaultInstance();
  }

  ListSnapshotsResponse listSnapshots(ListSnapshotsRequest r) {
    synchronized (lock) {
      List<SnapshotState> all = new ArrayList<>();
      for (SnapshotState s : snapshots.values()) {
        if ((r.getSnapshotId().isEmpty() || s.id().equals(r.getSnapshotId()))
            && (r.getSourceVolumeId().isEmpty() || s.sourceVolumeId().equals(r.getSourceVolumeId()))) {
          all.add(s);
        }
      }
      Page<SnapshotState> page = page(all, r.getMaxEntries(), r.getStartingToken());
      ListSnapshotsResponse.Builder out = ListSnapshotsResponse.newBuilder().setNextToken(page.nextToken());
      for (SnapshotState s : page.entries()) {
        out.addEntries(ListSnapshotsResponse.Entry.newBuilder().setSnapshot(s.toProto()));
      }
      return out.build();
    }
  }

  GetSnapshotResponse getSnapshot(GetSnapshotRequest r) {
    requireId("snapshot_id", r.getSnapshotId());
    synchronized (lock) {
      SnapshotState s = snapshots.get(r.getSnapshotId());
      if (s == null) {
        throw notFound("snapshot '" + r.getSnapshotId() + "' does not exist");
      }
      return GetSnapshotResponse.newBuilder().setSnapshot(s.toProto()).build();
    }
  }

  ControllerExpandVolumeResponse controllerExpand(ControllerExpandVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    if (!r.hasCapacityRange()) {
      throw invalid("capacity_range is required");
    }
    long required = r.getCapacityRange().getRequiredBytes();
    long limit = r.getCapacityRange().getLimitBytes();
    if (required < 0 || limit < 0 || (limit > 0 && limit < required)) {
      throw invalid("capacity_range is invalid: required_bytes=" + required + ", limit_bytes=" + limit);
    }
    synchronized (lock) {
      VolumeState v = volume(r.getVolumeId());
      if (limit > 0 && v.capacity > limit) {
        throw Status.OUT_OF_RANGE.withDescription("volume " + v.id + " is already " + v.capacity
            + " bytes, more than limit_bytes " + limit).asRuntimeException();
      }
      if (required > v.capacity) {
        if (required - v.capacity > TOTAL_CAPACITY_BYTES - usedLocked()) {
          throw Status.OUT_OF_RANGE.withDescription("not enough capacity").asRuntimeException();
        }
        v.capacity = required;
        persistLocked();
      }
      return ControllerExpandVolumeResponse.newBuilder()
          .setCapacityBytes(v.capacity)
          .setNodeExpansionRequired(nodeHas(NodeServiceCapability.RPC.Type.EXPAND_VOLUME))
          .build();
    }
  }

  ControllerGetVolumeResponse controllerGetVolume(ControllerGetVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (lock) {
      VolumeState v = volume(r.getVolumeId());
      return ControllerGetVolumeResponse.newBuilder()
          .setVolume(v.toProto())
          .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder()
              .addAllPublishedNodeIds(v.publishedTo.keySet())
              .setVolumeCondition(healthy()))
          .build();
    }
  }

  ControllerModifyVolumeResponse controllerModify(ControllerModifyVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (lock) {
      volume(r.getVolumeId());
    }
    if (r.getMutableParametersCount() > 0) {
      throw invalid("mutable_parameters " + r.getMutableParametersMap().keySet()
          + " are not supported: this driver has no mutable parameters");
    }
    return ControllerModifyVolumeResponse.getDefaultInstance();
  }

  // ---- Node ---------------------------------------------------------------------------------

  NodeStageVolumeResponse nodeStage(NodeStageVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("staging_target_path", r.getStagingTargetPath());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    synchronized (lock) {
      VolumeState v = volume(r.getVolumeId());
      v.stagedAt.add(r.getStagingTargetPath());
      persistLocked();
    }
    return NodeStageVolumeResponse.getDefaultInstance();
  }

  NodeUnstageVolumeResponse nodeUnstage(NodeUnstageVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("staging_target_path", r.getStagingTargetPath());
    synchronized (lock) {
      VolumeState v = volumes.get(r.getVolumeId());
      if (v != null) {
        v.stagedAt.remove(r.getStagingTargetPath());
      }
      persistLocked();
    }
    return NodeUnstageVolumeResponse.getDefaultInstance();
  }

  NodePublishVolumeResponse nodePublish(NodePublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("target_path", r.getTargetPath());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    synchronized (lock) {
      VolumeState v = volume(r.getVolumeId());
      if (nodeHas(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME)) {
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
      persistLocked();
    }
    return NodePublishVolumeResponse.getDefaultInstance();
  }

  NodeUnpublishVolumeResponse nodeUnpublish(NodeUnpublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("target_path", r.getTargetPath());
    synchronized (lock) {
      VolumeState v = volumes.get(r.getVolumeId());
      if (v != null && v.publishedAt.remove(r.getTargetPath()) != null) {
        // Forgotten first, so a crash between the two leaves a stray directory, not a volume
        // published at a path that no longer exists.
        persistLocked();
        removeTarget(Path.of(r.getTargetPath()));
      }
    }
    return NodeUnpublishVolumeResponse.getDefaultInstance();
  }

  NodeGetVolumeStatsResponse nodeGetVolumeStats(NodeGetVolumeStatsRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("volume_path", r.getVolumePath());
    synchronized (lock) {
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
    synchronized (lock) {
      VolumeState v = volumeAt(r.getVolumeId(), r.getVolumePath());
      long required = r.getCapacityRange().getRequiredBytes();
      if (required > v.capacity) {
        v.capacity = required;
        persistLocked();
      }
      return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(v.capacity).build();
    }
  }

  // ---- helpers ------------------------------------------------------------------------------

  /** A required single {@code volume_capability}, checked like every capability. */
  private static void requireCapability(boolean present, VolumeCapability capability) {
    if (!present) {
      throw invalid("volume_capability is required");
    }
    checkCapabilities(List.of(capability), "volume_capability");
  }

  /** A required, non-empty {@code volume_capabilities} list. */
  private static void requireCapabilities(List<VolumeCapability> capabilities) {
    if (capabilities.isEmpty()) {
      throw invalid("volume_capabilities must not be empty");
    }
    checkCapabilities(capabilities, "volume_capabilities");
  }

  /** Under the lock: the volume, which must be published or staged at {@code path} (else NOT_FOUND). */
  private VolumeState volumeAt(String volumeId, String path) {
    VolumeState v = volume(volumeId);
    if (!v.publishedAt.containsKey(path) && !v.stagedAt.contains(path)) {
      throw notFound("volume " + v.id + " is not published or staged at " + path);
    }
    return v;
  }

  private String nodeId() {
    return script.nodeInfo().getNodeId();
  }

  private boolean nodeHas(NodeServiceCapability.RPC.Type type) {
    for (NodeServiceCapability c : script.nodeCapabilities()) {
      if (c.hasRpc() && c.getRpc().getTypeValue() == type.getNumber()) {
        return true;
      }
    }
    return false;
  }

  private long usedLocked() {
    long used = 0;
    for (VolumeState v : volumes.values()) {
      used += v.capacity;
    }
    return used;
  }

  private VolumeState findVolumeByName(String name) {
    for (VolumeState v : volumes.values()) {
      if (v.name.equals(name)) {
        return v;
      }
    }
    return null;
  }

  private VolumeState volume(String id) {
    VolumeState v = volumes.get(id);
    if (v == null) {
      throw notFound("volume '" + id + "' does not exist");
    }
    return v;
  }

  private static VolumeCondition healthy() {
    return VolumeCondition.newBuilder().setAbnormal(false).setMessage("volume is healthy").build();
  }

  /** One page of a list call: its entries, and the token of the next page ({@code ""} after the last). */
  private record Page<T>(List<T> entries, String nextToken) {}

  /** The page of {@code all} that starts at {@code token}; an unreadable or out-of-range token is ABORTED (CSI). */
  private static <T> Page<T> page(List<T> all, int maxEntries, String token) {
    int size = all.size();
    if (maxEntries < 0) {
      throw invalid("max_entries must not be negative, got " + maxEntries);
    }
    int from = 0;
    if (!token.isEmpty()) {
      try {
        from = Integer.parseInt(token);
      } catch (NumberFormatException e) {
        throw Status.ABORTED.withDescription("starting_token '" + token + "' is not a token this plugin issued")
            .asRuntimeException();
      }
      if (from < 0 || from > size) {
        throw Status.ABORTED.withDescription("starting_token '" + token + "' is out of range (" + size
            + " entries)").asRuntimeException();
      }
    }
    int to = maxEntries == 0 ? size : (int) Math.min(size, (long) from + maxEntries);
    return new Page<>(all.subList(from, to), to < size ? Integer.toString(to) : "");
  }

  private static void checkCapabilities(List<VolumeCapability> caps, String field) {
    for (VolumeCapability c : caps) {
      if (c.getAccessTypeCase() == VolumeCapability.AccessTypeCase.ACCESSTYPE_NOT_SET) {
        throw invalid(field + ": access_type (mount or block) is required");
      }
      if (!c.hasAccessMode() || c.getAccessMode().getModeValue() == 0) {
        throw invalid(field + ": access_mode is required");
      }
    }
  }

  private static void requireName(String field, String value) {
    if (value.isEmpty()) {
      throw invalid(field + " is required");
    }
    if (value.length() > MAX_NAME_LENGTH) {
      throw invalid(field + " is longer than " + MAX_NAME_LENGTH + " characters");
    }
  }

  private static void requireId(String field, String value) {
    if (value.isEmpty()) {
      throw invalid(field + " is required");
    }
  }

  private static StatusRuntimeException invalid(String message) {
    return Status.INVALID_ARGUMENT.withDescription(message).asRuntimeException();
  }

  private static StatusRuntimeException notFound(String message) {
    return Status.NOT_FOUND.withDescription(message).asRuntimeException();
  }

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
