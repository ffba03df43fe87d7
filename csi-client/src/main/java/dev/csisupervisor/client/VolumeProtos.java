package dev.csisupervisor.client;

import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeResponse;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsResponse;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeContentSource;
import dev.csisupervisor.csi.v1.VolumeUsage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The volume calls' values to and from their protobuf messages: each call's request from our request record
 * or arguments (already checked by the caller), and the values in its response.
 */
final class VolumeProtos {
  private VolumeProtos() {}

  // ---- requests ----

  static NodeStageVolumeRequest nodeStage(NodeStageRequest r) {
    return NodeStageVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .putAllPublishContext(r.publishContext())
        .setStagingTargetPath(r.stagingPath().toString())
        .setVolumeCapability(capability(r.capability()))
        .putAllSecrets(r.secrets().reveal())
        .putAllVolumeContext(r.volumeContext())
        .build();
  }

  static NodeUnstageVolumeRequest nodeUnstage(String volumeId, Path stagingPath) {
    return NodeUnstageVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setStagingTargetPath(stagingPath.toString()).build();
  }

  static NodePublishVolumeRequest nodePublish(NodePublishRequest r) {
    NodePublishVolumeRequest.Builder q = NodePublishVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .putAllPublishContext(r.publishContext())
        .setTargetPath(r.targetPath().toString())
        .setVolumeCapability(capability(r.capability()))
        .setReadonly(r.readOnly())
        .putAllSecrets(r.secrets().reveal())
        .putAllVolumeContext(r.volumeContext());
    r.stagingPath().ifPresent(p -> q.setStagingTargetPath(p.toString()));
    return q.build();
  }

  static NodeUnpublishVolumeRequest nodeUnpublish(String volumeId, Path targetPath) {
    return NodeUnpublishVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setTargetPath(targetPath.toString()).build();
  }

  static NodeGetVolumeStatsRequest nodeGetVolumeStats(String volumeId, Path volumePath, Optional<Path> stagingPath) {
    NodeGetVolumeStatsRequest.Builder q = NodeGetVolumeStatsRequest.newBuilder()
        .setVolumeId(volumeId).setVolumePath(volumePath.toString());
    stagingPath.ifPresent(p -> q.setStagingTargetPath(p.toString()));
    return q.build();
  }

  static NodeExpandVolumeRequest nodeExpand(NodeExpandRequest r) {
    NodeExpandVolumeRequest.Builder q = NodeExpandVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .setVolumePath(r.volumePath().toString())
        .setCapacityRange(range(r.capacityRange()))
        .putAllSecrets(r.secrets().reveal());
    r.stagingPath().ifPresent(p -> q.setStagingTargetPath(p.toString()));
    r.capability().ifPresent(c -> q.setVolumeCapability(capability(c)));
    return q.build();
  }

  static dev.csisupervisor.csi.v1.CreateVolumeRequest createVolume(CreateVolumeRequest r) {
    dev.csisupervisor.csi.v1.CreateVolumeRequest.Builder q = dev.csisupervisor.csi.v1.CreateVolumeRequest.newBuilder()
        .setName(r.name())
        .putAllParameters(r.parameters())
        .putAllSecrets(r.secrets().reveal());
    r.capacityRange().ifPresent(c -> q.setCapacityRange(range(c)));
    r.capabilities().forEach(c -> q.addVolumeCapabilities(capability(c)));
    r.contentSource().ifPresent(s -> q.setVolumeContentSource(contentSource(s)));
    q.putAllMutableParams(r.mutableParameters());
    r.accessibilityRequirements().ifPresent(t -> {
      dev.csisupervisor.csi.v1.TopologyRequirement.Builder req = q.getAccessibilityRequirementsBuilder();
      t.requisite().forEach(s -> req.addRequisite(Topology.newBuilder().putAllSegments(s)));
      t.preferred().forEach(s -> req.addPreferred(Topology.newBuilder().putAllSegments(s)));
    });
    return q.build();
  }

  static DeleteVolumeRequest deleteVolume(String volumeId, Secrets secrets) {
    return DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).putAllSecrets(secrets.reveal()).build();
  }

  static ControllerPublishVolumeRequest controllerPublish(ControllerPublishRequest r) {
    return ControllerPublishVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .setNodeId(r.nodeId())
        .setVolumeCapability(capability(r.capability()))
        .setReadonly(r.readOnly())
        .putAllSecrets(r.secrets().reveal())
        .putAllVolumeContext(r.volumeContext())
        .build();
  }

  static ControllerUnpublishVolumeRequest controllerUnpublish(String volumeId, String nodeId, Secrets secrets) {
    return ControllerUnpublishVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setNodeId(nodeId).putAllSecrets(secrets.reveal()).build();
  }

  static ControllerExpandVolumeRequest controllerExpand(String volumeId, CapacityRange capacityRange,
      Optional<VolumeCapability> capability, Secrets secrets) {
    ControllerExpandVolumeRequest.Builder q = ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(volumeId)
        .setCapacityRange(range(capacityRange))
        .putAllSecrets(secrets.reveal());
    capability.ifPresent(c -> q.setVolumeCapability(capability(c)));
    return q.build();
  }

  // ---- values ----

  static dev.csisupervisor.csi.v1.VolumeCapability capability(VolumeCapability c) {
    dev.csisupervisor.csi.v1.VolumeCapability.Builder b = dev.csisupervisor.csi.v1.VolumeCapability.newBuilder()
        .setAccessMode(dev.csisupervisor.csi.v1.VolumeCapability.AccessMode.newBuilder()
            .setModeValue(c.accessMode().value()));
    if (c.accessType() == VolumeCapability.AccessType.BLOCK) {
      b.setBlock(dev.csisupervisor.csi.v1.VolumeCapability.BlockVolume.getDefaultInstance());
    } else {
      b.setMount(dev.csisupervisor.csi.v1.VolumeCapability.MountVolume.newBuilder()
          .setFsType(c.fsType())
          .addAllMountFlags(c.mountFlags())
          .setVolumeMountGroup(c.volumeMountGroup()));
    }
    return b.build();
  }

  static dev.csisupervisor.csi.v1.CapacityRange range(CapacityRange r) {
    return dev.csisupervisor.csi.v1.CapacityRange.newBuilder()
        .setRequiredBytes(r.requiredBytes()).setLimitBytes(r.limitBytes()).build();
  }

  static VolumeStats stats(NodeGetVolumeStatsResponse response) {
    List<VolumeStats.Usage> usage = new ArrayList<>();
    for (VolumeUsage u : response.getUsageList()) {
      VolumeStats.Unit unit = switch (u.getUnitValue()) {
        case VolumeUsage.Unit.BYTES_VALUE -> VolumeStats.Unit.BYTES;
        case VolumeUsage.Unit.INODES_VALUE -> VolumeStats.Unit.INODES;
        default -> VolumeStats.Unit.UNKNOWN; // 0, or a unit newer than this build
      };
      usage.add(new VolumeStats.Usage(u.getAvailable(), u.getTotal(), u.getUsed(), unit));
    }
    Optional<VolumeStats.Condition> condition = response.hasVolumeCondition()
        ? Optional.of(new VolumeStats.Condition(response.getVolumeCondition().getAbnormal(),
            response.getVolumeCondition().getMessage()))
        : Optional.empty();
    return new VolumeStats(usage, condition);
  }

  static CsiVolume volume(Path socket, String method, CreateVolumeResponse response) throws InvalidResponseException {
    return volume(socket, method, "volume", response.hasVolume(), response.getVolume());
  }

  /** The volume in {@code field} of a response; {@code present}: whether the response has it. */
  static CsiVolume volume(Path socket, String method, String field, boolean present, Volume v)
      throws InvalidResponseException {
    if (!present || v.getVolumeId().isBlank()) {
      throw new InvalidResponseException(socket, method, field + ".volume_id is empty, but CSI requires it");
    }
    long capacity = capacity(socket, method, field + ".capacity_bytes", v.getCapacityBytes());
    List<Map<String, String>> topology = new ArrayList<>();
    for (Topology t : v.getAccessibleTopologyList()) {
      topology.add(t.getSegmentsMap());
    }
    Optional<ContentSource> source = Optional.empty();
    if (v.hasContentSource()) {
      VolumeContentSource s = v.getContentSource();
      String id = switch (s.getTypeCase()) {
        case SNAPSHOT -> s.getSnapshot().getSnapshotId();
        case VOLUME -> s.getVolume().getVolumeId();
        default -> "";
      };
      if (id.isBlank()) {
        throw new InvalidResponseException(socket, method, field + ".content_source has no snapshot or volume id");
      }
      source = Optional.of(s.getTypeCase() == VolumeContentSource.TypeCase.SNAPSHOT ? ContentSource.snapshot(id)
          : ContentSource.volume(id));
    }
    return new CsiVolume(v.getVolumeId(), capacity, v.getVolumeContextMap(), topology, source);
  }

  static VolumeContentSource contentSource(ContentSource s) {
    VolumeContentSource.Builder b = VolumeContentSource.newBuilder();
    if (s.kind() == ContentSource.Kind.SNAPSHOT) {
      b.setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.id()));
    } else {
      b.setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(s.id()));
    }
    return b.build();
  }

  /** A size the plugin reported in {@code field}: CSI sizes are never negative (0: not reported). */
  static long capacity(Path socket, String method, String field, long bytes) throws InvalidResponseException {
    if (bytes < 0) {
      throw new InvalidResponseException(socket, method, field + " is " + bytes + ", but CSI forbids negative values");
    }
    return bytes;
  }
}
