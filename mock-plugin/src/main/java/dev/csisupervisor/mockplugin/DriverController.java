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
import io.grpc.Status;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The Controller side of the {@link InMemoryDriver} for volumes: created ({@link DriverCreate}: empty, restored from
 * a snapshot or cloned, with mutable parameters, in a pool), deleted, published to the one node it knows
 * (NodeGetInfo's node id; with a shared cloud, to any node), expanded, modified, and the capacity left, with the CSI
 * spec v1.12.0's error codes and idempotency rules. Listing, reading and validating volumes are
 * {@link DriverInventory}'s, snapshots {@link DriverSnapshots}'. A plugin with a topology of its own (NodeGetInfo's)
 * and no pools creates its volumes there, and refuses a requisite that excludes it; one that expands offline only
 * refuses to expand a volume in use. Every call runs under the driver's lock and saves a change before it answers.
 * Thread-safe.
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

  private final DriverCreate create;

  DriverController(InMemoryDriver driver, Script script, Clock clock) {
    this.create = new DriverCreate(driver, this, clock);
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
    DriverChecks.checkMutable(driver.settings().mutableNames(), r.getMutableParamsMap(), "mutable_parameters");
    VolumeContentSource source = r.hasVolumeContentSource() ? r.getVolumeContentSource() : null;
    if (source != null) {
      CloudSnapshots.fields(source); // INVALID_ARGUMENT for a source with neither kind
    }
    Pools pools = driver.settings().pools();
    boolean accessible = accessibleFrom(r) || !pools.isEmpty(); // with pools, the pool chosen is where it is
    java.time.Duration takes = driver.createTime();
    CreateVolumeResponse answer;
    synchronized (driver.lock()) {
      if (pendingCreates.contains(name)) {
        // CSI: ABORTED when an operation is pending for the volume; the CO tries again.
        throw Status.ABORTED.withDescription("a CreateVolume of '" + name + "' is pending").asRuntimeException();
      }
      SharedCloud cloud = driver.cloud();
      DriverCreate.Made made = cloud != null ? create.onCloud(cloud, r, source, accessible)
          : create.inMemory(r, source, accessible, pools);
      driver.persistLocked();
      answer = CreateVolumeResponse.newBuilder().setVolume(made.volume()).build();
      if (made.now() && !takes.isZero()) {
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
  Map<String, String> ownTopology() {
    NodeGetInfoResponse info = script.nodeInfo();
    return info.hasAccessibleTopology() ? info.getAccessibleTopology().getSegmentsMap() : Map.of();
  }

  /** A volume as this plugin answers it: accessible from its pool, else its own topology, if it has one. */
  Volume toProto(MockVolume v) {
    return withTopology(v.toProto(), v.pool);
  }

  /** A disk of the shared cloud as this plugin answers it. */
  Volume toProto(SharedCloud.Disk d) {
    Volume.Builder v = Volume.newBuilder().setVolumeId(d.id()).setCapacityBytes(d.capacity())
        .putVolumeContext("name", d.name().isEmpty() ? d.id() : d.name());
    if (d.source() != null) {
      v.setContentSource(d.source());
    }
    return withTopology(v.build(), d.pool());
  }

  private Volume withTopology(Volume proto, String pool) {
    Map<String, String> at = pool.isEmpty() ? ownTopology() : Pools.segment(pool);
    return at.isEmpty() ? proto : proto.toBuilder().addAccessibleTopology(Topology.newBuilder().putAllSegments(at))
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

  DeleteVolumeResponse deleteVolume(DeleteVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    synchronized (driver.lock()) {
      MockVolume v = driver.findVolume(r.getVolumeId());
      if (v != null && (!v.publishedAt.isEmpty() || !v.stagedAt.isEmpty())) {
        throw Status.FAILED_PRECONDITION.withDescription("volume " + v.id
            + " is still staged or published on the node").asRuntimeException();
      }
      if (driver.cloud() != null) {
        // Refused while attached, or (dependent snapshots) while it has snapshots, by the cloud itself.
        driver.cloud().deleteDisk(r.getVolumeId(), driver.settings().dependentSnapshots());
      } else if (driver.settings().dependentSnapshots()) {
        List<String> snaps = driver.snapshots().stream().filter(x -> x.sourceVolumeId().equals(r.getVolumeId()))
            .map(MockSnapshot::id).toList();
        if (!snaps.isEmpty()) {
          throw Status.FAILED_PRECONDITION.withDescription("volume '" + r.getVolumeId() + "' has snapshots " + snaps
              + " (dependent snapshots): delete them first").asRuntimeException();
        }
      }
      driver.removeVolume(r.getVolumeId()); // unknown: already deleted, OK
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
      MockVolume v = driver.volume(r.getVolumeId());
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
      MockVolume v = driver.findVolume(r.getVolumeId());
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

  /**
   * GetCapacity: without pools, what the 1 TiB "pool" has left; with pools ({@code --pools}), the room of the pool an
   * accessible_topology names (0 for a topology that names none of its pools), or of all pools without one.
   */
  GetCapacityResponse getCapacity(GetCapacityRequest r) {
    checkCapabilities(r.getVolumeCapabilitiesList(), "volume_capabilities");
    Pools pools = driver.settings().pools();
    if (!pools.isEmpty()) {
      Map<String, Long> used;
      synchronized (driver.lock()) {
        used = driver.cloud() != null ? driver.cloud().usedByPool() : driver.usedByPool();
      }
      long available = r.hasAccessibleTopology()
          ? pools.poolOf(r.getAccessibleTopology().getSegmentsMap()).map(p -> pools.free(p, used)).orElse(0L)
          : pools.sizes().keySet().stream().mapToLong(p -> pools.free(p, used)).sum();
      return GetCapacityResponse.newBuilder()
          .setAvailableCapacity(available)
          .setMaximumVolumeSize(Int64Value.of(r.hasAccessibleTopology() ? available
              : pools.sizes().keySet().stream().mapToLong(p -> pools.free(p, used)).max().orElse(0)))
          .setMinimumVolumeSize(Int64Value.of(1))
          .build();
    }
    synchronized (driver.lock()) {
      return GetCapacityResponse.newBuilder()
          .setAvailableCapacity(TOTAL_CAPACITY_BYTES - driver.usedBytes())
          .setMaximumVolumeSize(Int64Value.of(TOTAL_CAPACITY_BYTES))
          .setMinimumVolumeSize(Int64Value.of(1))
          .build();
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
      MockVolume v = driver.volume(r.getVolumeId());
      SharedCloud cloud = driver.cloud();
      if (cloud != null) {
        // The cloud's size is the disk's (another process may have expanded it); a removed disk is NOT_FOUND.
        v.capacity = cloud.find(v.id).orElseThrow(() -> notFound("volume '" + v.id + "' does not exist")).capacity();
      }
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
        if (cloud != null) {
          cloud.resize(v.id, required);
        }
        driver.persistLocked();
      }
      return ControllerExpandVolumeResponse.newBuilder()
          .setCapacityBytes(v.capacity)
          .setNodeExpansionRequired(script.hasNodeCapability(NodeServiceCapability.RPC.Type.EXPAND_VOLUME))
          .build();
    }
  }

  /**
   * ControllerModifyVolume: the keys given merged into the volume's mutable parameters, if each is one it accepts
   * ({@code --mutable-parameters}); else INVALID_ARGUMENT and nothing changed. An unknown volume is NOT_FOUND.
   */
  ControllerModifyVolumeResponse controllerModify(ControllerModifyVolumeRequest r) {
    requireId("volume_id", r.getVolumeId());
    SharedCloud cloud = driver.cloud();
    if (cloud != null) {
      if (cloud.find(r.getVolumeId()).isEmpty()) {
        throw notFound("volume '" + r.getVolumeId() + "' does not exist");
      }
      DriverChecks.checkMutable(driver.settings().mutableNames(), r.getMutableParametersMap(),
          "mutable_parameters");
      cloud.modify(r.getVolumeId(), r.getMutableParametersMap());
      return ControllerModifyVolumeResponse.getDefaultInstance();
    }
    synchronized (driver.lock()) {
      MockVolume v = driver.volume(r.getVolumeId());
      DriverChecks.checkMutable(driver.settings().mutableNames(), r.getMutableParametersMap(),
          "mutable_parameters");
      v.mutable.putAll(r.getMutableParametersMap());
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
}
