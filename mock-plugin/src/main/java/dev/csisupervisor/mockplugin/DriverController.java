package dev.csisupervisor.mockplugin;

import static dev.csisupervisor.mockplugin.DriverChecks.checkCapabilities;
import static dev.csisupervisor.mockplugin.DriverChecks.invalid;
import static dev.csisupervisor.mockplugin.DriverChecks.notFound;
import static dev.csisupervisor.mockplugin.DriverChecks.requireCapabilities;
import static dev.csisupervisor.mockplugin.DriverChecks.requireCapability;
import static dev.csisupervisor.mockplugin.DriverChecks.requireId;
import static dev.csisupervisor.mockplugin.DriverChecks.requireName;
import static dev.csisupervisor.mockplugin.InMemoryDriver.healthy;

import com.google.protobuf.Int64Value;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerGetVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
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
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.TopologyRequirement;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.mockplugin.InMemoryDriver.SnapshotState;
import dev.csisupervisor.mockplugin.InMemoryDriver.VolumeState;
import io.grpc.Status;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Controller side of the {@link InMemoryDriver}: volumes and snapshots, created, deleted,
 * published to the one node it knows (NodeGetInfo's node id), validated, listed in pages, and
 * expanded, with the CSI spec v1.12.0's error codes and idempotency rules. A plugin with a topology of its
 * own (NodeGetInfo's) creates its volumes there, and refuses a requisite that excludes it; one that expands
 * offline only refuses to expand a volume in use. Every call runs under
 * the driver's lock and saves a change before it answers. Thread-safe.
 */
final class DriverController {

  /** Capacity of a volume created without a capacity range. */
  static final long DEFAULT_VOLUME_BYTES = 1L << 30;
  /** Total capacity of the backing "pool", reported by GetCapacity. */
  static final long TOTAL_CAPACITY_BYTES = 1L << 40;

  /**
   * The Controller RPC capabilities this side implements and advertises with
   * {@link MockCsiPlugin.Builder#allCapabilities()}: all but MODIFY_VOLUME.
   */
  static final List<ControllerServiceCapability> CAPABILITIES = List.copyOf(Capabilities.CONTROLLER.of(
      ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
      ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME,
      ControllerServiceCapability.RPC.Type.LIST_VOLUMES,
      ControllerServiceCapability.RPC.Type.GET_CAPACITY,
      ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
      ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS,
      ControllerServiceCapability.RPC.Type.CLONE_VOLUME,
      ControllerServiceCapability.RPC.Type.PUBLISH_READONLY,
      ControllerServiceCapability.RPC.Type.EXPAND_VOLUME,
      ControllerServiceCapability.RPC.Type.LIST_VOLUMES_PUBLISHED_NODES,
      ControllerServiceCapability.RPC.Type.VOLUME_CONDITION,
      ControllerServiceCapability.RPC.Type.GET_VOLUME,
      // GET_SNAPSHOT is implemented but not advertised: csi-sanity v5.3.1 does not
      // know it yet and fails a plugin that advertises it.
      ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER));

  private final InMemoryDriver driver;
  private final Script script;
  private final Clock clock;

  DriverController(InMemoryDriver driver, Script script, Clock clock) {
    this.driver = driver;
    this.script = script;
    this.clock = clock;
  }

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
    boolean accessible = accessibleFrom(r);
    java.time.Duration takes = driver.createTime();
    CreateVolumeResponse answer;
    synchronized (driver.lock()) {
      if (pendingCreates.contains(name)) {
        // CSI: ABORTED when an operation is pending for the volume; the CO tries again.
        throw Status.ABORTED.withDescription("a CreateVolume of '" + name + "' is pending").asRuntimeException();
      }
      VolumeState existing = driver.findVolumeByName(name);
      SharedCloud cloud = driver.cloud();
      if (existing == null && cloud != null) {
        // Made by another plugin process on the same cloud (its sender may have died): that disk, never a second.
        java.util.Optional<SharedCloud.Disk> d = cloud.diskNamed(name);
        if (d.isPresent()) {
          existing = driver.findVolume(d.get().id()) != null ? driver.findVolume(d.get().id())
              : driver.addVolume(d.get().id(), name, d.get().capacity());
          driver.persistLocked();
        }
      }
      if (existing != null) {
        boolean fits = existing.capacity >= required && (limit == 0 || existing.capacity <= limit);
        if (!fits || !sameSource(existing.source, r) || !accessible) {
          throw Status.ALREADY_EXISTS.withDescription("volume '" + name + "' already exists with "
              + existing.capacity + " bytes" + (existing.source != null ? " from " + existing.source : "")
              + (accessible ? "" : " at topology " + ownTopology())
              + ", incompatible with this request").asRuntimeException();
        }
        return CreateVolumeResponse.newBuilder().setVolume(toProto(existing)).build();
      }
      if (!accessible) {
        // CSI's CreateVolume errors: "Unable to provision in accessible_topology".
        throw Status.RESOURCE_EXHAUSTED.withDescription("this plugin provisions at topology " + ownTopology()
            + " only, which accessibility_requirements.requisite does not include").asRuntimeException();
      }
      long capacity = required > 0 ? required : (limit > 0 ? Math.min(limit, DEFAULT_VOLUME_BYTES) : DEFAULT_VOLUME_BYTES);
      VolumeContentSource source = null;
      if (r.hasVolumeContentSource()) {
        source = r.getVolumeContentSource();
        switch (source.getTypeCase()) {
          case SNAPSHOT -> {
            SnapshotState snap = driver.findSnapshot(source.getSnapshot().getSnapshotId());
            if (snap == null) {
              throw notFound("source snapshot '" + source.getSnapshot().getSnapshotId() + "' does not exist");
            }
            capacity = Math.max(capacity, snap.size());
          }
          case VOLUME -> {
            VolumeState src = driver.findVolume(source.getVolume().getVolumeId());
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
      if (capacity > TOTAL_CAPACITY_BYTES - driver.usedBytes()) {
        throw Status.OUT_OF_RANGE.withDescription("not enough capacity for " + capacity + " bytes")
            .asRuntimeException();
      }
      VolumeState v;
      if (cloud != null && source == null) {
        SharedCloud.Disk d = cloud.create(name, capacity, driver.volumeIdPrefix()).getKey();
        v = driver.addVolume(d.id(), name, d.capacity());
      } else {
        v = driver.addVolume(name, capacity, source);
        if (cloud != null) {
          cloud.addDisk(v.id, capacity);
        }
      }
      driver.persistLocked();
      answer = CreateVolumeResponse.newBuilder().setVolume(toProto(v)).build();
      if (!takes.isZero()) {
        pendingCreates.add(name);
      }
    }
    return answer;
  }

  /**
   * Whether a CreateVolume of {@code name} made its volume and is within its scripted create time: its answer is
   * sent later ({@link CsiServices}), then {@link #createAnswered}.
   */
  boolean createPending(String name) {
    synchronized (driver.lock()) {
      return pendingCreates.contains(name);
    }
  }

  /** The pending CreateVolume of {@code name} has been answered: the name may be asked again. */
  void createAnswered(String name) {
    synchronized (driver.lock()) {
      pendingCreates.remove(name);
    }
  }

  /** Names whose CreateVolume is under way (its scripted time), guarded by the driver's lock. */
  private final java.util.Set<String> pendingCreates = new java.util.HashSet<>();

  /** Its NodeGetInfo accessible_topology segments: where its volumes are; empty: everywhere. */
  private Map<String, String> ownTopology() {
    NodeGetInfoResponse info = script.nodeInfo();
    return info.hasAccessibleTopology() ? info.getAccessibleTopology().getSegmentsMap() : Map.of();
  }

  /** A volume as this plugin answers it: accessible from its own topology, if it has one. */
  private Volume toProto(VolumeState v) {
    Map<String, String> own = ownTopology();
    Volume proto = v.toProto();
    return own.isEmpty() ? proto : proto.toBuilder().addAccessibleTopology(Topology.newBuilder().putAllSegments(own))
        .build();
  }

  /**
   * Whether a volume at its own topology satisfies the request's accessibility requirements: a requisite must
   * include a topology with every segment of its own (preferred topologies are only a wish). Malformed
   * requirements are INVALID_ARGUMENT. A plugin without a topology is accessible from everywhere.
   */
  private boolean accessibleFrom(CreateVolumeRequest r) {
    if (!r.hasAccessibilityRequirements()) {
      return true;
    }
    TopologyRequirement t = r.getAccessibilityRequirements();
    if (t.getRequisiteCount() == 0 && t.getPreferredCount() == 0) {
      throw invalid("accessibility_requirements must have requisite or preferred topologies");
    }
    if (t.getRequisiteCount() > 0 && !t.getRequisiteList().containsAll(t.getPreferredList())) {
      throw invalid("accessibility_requirements.preferred must be a subset of its requisite");
    }
    Map<String, String> own = ownTopology();
    if (own.isEmpty() || t.getRequisiteCount() == 0) {
      return true;
    }
    return t.getRequisiteList().stream()
        .anyMatch(req -> req.getSegmentsMap().entrySet().containsAll(own.entrySet()));
  }

  private static boolean sameSource(VolumeContentSource existing, CreateVolumeRequest r) {
    VolumeContentSource wanted = r.hasVolumeContentSource() ? r.getVolumeContentSource() : null;
    return existing == null ? wanted == null : existing.equals(wanted);
  }

  DeleteVolumeResponse deleteVolume(DeleteVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (driver.lock()) {
      VolumeState v = driver.findVolume(r.getVolumeId());
      if (v != null && (!v.publishedAt.isEmpty() || !v.stagedAt.isEmpty())) {
        throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id
            + " is still staged or published on the node").asRuntimeException();
      }
      if (driver.cloud() != null && !driver.cloud().attachedTo(r.getVolumeId()).isEmpty()) {
        // As a cloud refuses to delete a disk that is attached (a volume in use: CSI's FAILED_PRECONDITION).
        throw Status.FAILED_PRECONDITION.withDescription("disk '" + r.getVolumeId() + "' is attached to node(s) "
            + driver.cloud().attachedTo(r.getVolumeId()) + "; detach it first").asRuntimeException();
      }
      driver.removeVolume(r.getVolumeId()); // unknown: already deleted, OK
      if (driver.cloud() != null) {
        driver.cloud().removeDisk(r.getVolumeId());
      }
      driver.persistLocked();
      driver.deleteVolumeData(r.getVolumeId()); // after the save: a failed save keeps volume and data
    }
    return DeleteVolumeResponse.getDefaultInstance();
  }

  ControllerPublishVolumeResponse controllerPublish(ControllerPublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireId("node_id", r.getNodeId());
    requireCapability(r.hasVolumeCapability(), r.getVolumeCapability());
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      // The cloud attaches to any node, once per disk for a single-node mode (outside the driver's lock: it takes
      // the scripted attach time).
      int mode = r.getVolumeCapability().getAccessMode().getModeValue();
      cloud.attach(r.getVolumeId(), r.getNodeId(), mode == 3 || mode == 4 || mode == 5);
    }
    synchronized (driver.lock()) {
      VolumeState v = driver.volume(r.getVolumeId());
      if (cloud == null && !r.getNodeId().equals(nodeId())) {
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
        long onNode = driver.volumes().stream().filter(x -> x.publishedTo.containsKey(r.getNodeId())).count();
        if (max > 0 && onNode >= max) {
          throw Status.RESOURCE_EXHAUSTED.withDescription("node " + r.getNodeId() + " already has "
              + onNode + " volumes published, its maximum").asRuntimeException();
        }
        v.publishedTo.put(r.getNodeId(), r.getReadonly());
        driver.persistLocked();
      }
      return ControllerPublishVolumeResponse.newBuilder()
          .putPublishContext("device", "/dev/mock/" + v.id)
          .build();
    }
  }

  ControllerUnpublishVolumeResponse controllerUnpublish(ControllerUnpublishVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    if (driver.cloud() != null) {
      driver.cloud().detach(r.getVolumeId(), r.getNodeId()); // an empty node id: from every node
    }
    synchronized (driver.lock()) {
      VolumeState v = driver.findVolume(r.getVolumeId());
      if (v != null) {
        if (r.getNodeId().isEmpty()) {
          v.publishedTo.clear(); // empty node id: from every node
        } else {
          v.publishedTo.remove(r.getNodeId());
        }
      }
      driver.persistLocked();
    }
    return ControllerUnpublishVolumeResponse.getDefaultInstance();
  }

  ValidateVolumeCapabilitiesResponse validate(ValidateVolumeCapabilitiesRequest r) {
    requireId("volume_id", r.getVolumeId());
    requireCapabilities(r.getVolumeCapabilitiesList());
    synchronized (driver.lock()) {
      driver.volume(r.getVolumeId());
    }
    return ValidateVolumeCapabilitiesResponse.newBuilder()
        .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
            .putAllVolumeContext(r.getVolumeContextMap())
            .addAllVolumeCapabilities(r.getVolumeCapabilitiesList())
            .putAllParameters(r.getParametersMap()))
        .build();
  }

  ListVolumesResponse listVolumes(ListVolumesRequest r) {
    synchronized (driver.lock()) {
      List<VolumeState> all = new ArrayList<>(driver.volumes());
      Page<VolumeState> page = page(all, r.getMaxEntries(), r.getStartingToken());
      ListVolumesResponse.Builder out = ListVolumesResponse.newBuilder().setNextToken(page.nextToken());
      for (VolumeState v : page.entries()) {
        out.addEntries(ListVolumesResponse.Entry.newBuilder()
            .setVolume(toProto(v))
            .setStatus(ListVolumesResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(v.publishedTo.keySet())
                .setVolumeCondition(healthy())));
      }
      return out.build();
    }
  }

  GetCapacityResponse getCapacity(GetCapacityRequest r) {
    checkCapabilities(r.getVolumeCapabilitiesList(), "volume_capabilities");
    synchronized (driver.lock()) {
      return GetCapacityResponse.newBuilder()
          .setAvailableCapacity(TOTAL_CAPACITY_BYTES - driver.usedBytes())
          .setMaximumVolumeSize(Int64Value.of(TOTAL_CAPACITY_BYTES))
          .setMinimumVolumeSize(Int64Value.of(1))
          .build();
    }
  }

  CreateSnapshotResponse createSnapshot(CreateSnapshotRequest r) {
    requireName("name", r.getName());
    requireId("source_volume_id", r.getSourceVolumeId());
    synchronized (driver.lock()) {
      for (SnapshotState s : driver.snapshots()) {
        if (s.name().equals(r.getName())) {
          if (!s.sourceVolumeId().equals(r.getSourceVolumeId())) {
            throw Status.ALREADY_EXISTS.withDescription("snapshot '" + r.getName()
                + "' already exists for volume " + s.sourceVolumeId()).asRuntimeException();
          }
          return CreateSnapshotResponse.newBuilder().setSnapshot(s.toProto()).build();
        }
      }
      VolumeState v = driver.volume(r.getSourceVolumeId());
      SnapshotState s = driver.addSnapshot(r.getName(), v, clock.instant());
      driver.persistLocked();
      return CreateSnapshotResponse.newBuilder().setSnapshot(s.toProto()).build();
    }
  }

  DeleteSnapshotResponse deleteSnapshot(DeleteSnapshotRequest r) {
    requireId("snapshot_id", r.getSnapshotId());
    synchronized (driver.lock()) {
      driver.removeSnapshot(r.getSnapshotId());
      driver.persistLocked();
    }
    return DeleteSnapshotResponse.getDefaultInstance();
  }

  ListSnapshotsResponse listSnapshots(ListSnapshotsRequest r) {
    synchronized (driver.lock()) {
      List<SnapshotState> all = new ArrayList<>();
      for (SnapshotState s : driver.snapshots()) {
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
    synchronized (driver.lock()) {
      SnapshotState s = driver.findSnapshot(r.getSnapshotId());
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
    synchronized (driver.lock()) {
      VolumeState v = driver.volume(r.getVolumeId());
      if (offlineExpansionOnly() && (!v.publishedTo.isEmpty() || !v.stagedAt.isEmpty() || !v.publishedAt.isEmpty())) {
        // CSI's ControllerExpandVolume errors: "Volume in use".
        throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id + " is published or staged, and this "
            + "plugin expands volumes offline only (VolumeExpansion OFFLINE)").asRuntimeException();
      }
      if (limit > 0 && v.capacity > limit) {
        throw Status.OUT_OF_RANGE.withDescription("volume " + v.id + " is already " + v.capacity
            + " bytes, more than limit_bytes " + limit).asRuntimeException();
      }
      if (required > v.capacity) {
        if (required - v.capacity > TOTAL_CAPACITY_BYTES - driver.usedBytes()) {
          throw Status.OUT_OF_RANGE.withDescription("not enough capacity").asRuntimeException();
        }
        v.capacity = required;
        driver.persistLocked();
      }
      return ControllerExpandVolumeResponse.newBuilder()
          .setCapacityBytes(v.capacity)
          .setNodeExpansionRequired(script.hasNodeCapability(NodeServiceCapability.RPC.Type.EXPAND_VOLUME))
          .build();
    }
  }

  ControllerGetVolumeResponse controllerGetVolume(ControllerGetVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (driver.lock()) {
      VolumeState v = driver.volume(r.getVolumeId());
      return ControllerGetVolumeResponse.newBuilder()
          .setVolume(toProto(v))
          .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder()
              .addAllPublishedNodeIds(v.publishedTo.keySet())
              .setVolumeCondition(healthy()))
          .build();
    }
  }

  ControllerModifyVolumeResponse controllerModify(ControllerModifyVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (driver.lock()) {
      driver.volume(r.getVolumeId());
    }
    if (r.getMutableParametersCount() > 0) {
      throw invalid("mutable_parameters " + r.getMutableParametersMap().keySet()
          + " are not supported: this driver has no mutable parameters");
    }
    return ControllerModifyVolumeResponse.getDefaultInstance();
  }

  /** It advertises VolumeExpansion OFFLINE and not ONLINE: a published or staged volume is not expanded. */
  private boolean offlineExpansionOnly() {
    boolean online = false;
    boolean offline = false;
    for (PluginCapability c : script.pluginCapabilities()) {
      if (c.hasVolumeExpansion()) {
        online |= c.getVolumeExpansion().getType() == PluginCapability.VolumeExpansion.Type.ONLINE;
        offline |= c.getVolumeExpansion().getType() == PluginCapability.VolumeExpansion.Type.OFFLINE;
      }
    }
    return offline && !online;
  }

  private String nodeId() {
    return script.nodeInfo().getNodeId();
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
}
