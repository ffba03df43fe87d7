package dev.csisupervisor.client;

import dev.csisupervisor.csi.v1.CreateVolumeResponse;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsResponse;
import dev.csisupervisor.csi.v1.Topology;
import dev.csisupervisor.csi.v1.Volume;
import dev.csisupervisor.csi.v1.VolumeUsage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The volume calls' values to and from their protobuf messages. */
final class VolumeProtos {
  private VolumeProtos() {}

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
    Volume v = response.getVolume();
    if (!response.hasVolume() || v.getVolumeId().isBlank()) {
      throw new InvalidResponseException(socket, method, "volume.volume_id is empty, but CSI requires it");
    }
    long capacity = capacity(socket, method, "volume.capacity_bytes", v.getCapacityBytes());
    List<Map<String, String>> topology = new ArrayList<>();
    for (Topology t : v.getAccessibleTopologyList()) {
      topology.add(t.getSegmentsMap());
    }
    return new CsiVolume(v.getVolumeId(), capacity, v.getVolumeContextMap(), topology);
  }

  /** A size the plugin reported in {@code field}: CSI sizes are never negative (0: not reported). */
  static long capacity(Path socket, String method, String field, long bytes) throws InvalidResponseException {
    if (bytes < 0) {
      throw new InvalidResponseException(socket, method, field + " is " + bytes + ", but CSI forbids negative values");
    }
    return bytes;
  }
}
