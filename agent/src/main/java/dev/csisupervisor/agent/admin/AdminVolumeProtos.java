package dev.csisupervisor.agent.admin;

import dev.csisupervisor.admin.v1.Topology;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.admin.v1.VolumeAlloc;
import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.admin.v1.VolumeUsageInfo;
import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.common.Printable;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** The admin API's volume messages to and from the volume manager's values. Stateless. */
public final class AdminVolumeProtos {
  private AdminVolumeProtos() {}

  /**
   * The capability a request asks for.
   *
   * @param field the request's field, for messages ({@code access})
   * @throws IllegalArgumentException naming {@code field.access_type} or {@code field.access_mode}
   */
  public static VolumeCapability capability(VolumeAccess a, String field) {
    if (a.getAccessMode().isEmpty()) {
      throw new IllegalArgumentException(field + ".access_mode must be set (e.g. single-node-writer)");
    }
    AccessMode mode;
    try {
      mode = AccessMode.parse(a.getAccessMode());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(field + "." + e.getMessage().replace("access mode", "access_mode"), e);
    }
    String type = a.getAccessType().isEmpty() ? "mount" : a.getAccessType().toLowerCase(Locale.ROOT);
    return switch (type) {
      case "mount" -> new VolumeCapability(VolumeCapability.AccessType.MOUNT, a.getFsType(), a.getMountFlagsList(),
          a.getVolumeMountGroup(), mode);
      case "block" -> {
        if (!a.getFsType().isEmpty() || a.getMountFlagsCount() > 0 || !a.getVolumeMountGroup().isEmpty()) {
          throw new IllegalArgumentException(field + ": a block volume takes no fs_type, mount_flags or volume_mount_group");
        }
        yield VolumeCapability.block(mode);
      }
      default -> throw new IllegalArgumentException(field + ".access_type must be mount or block, got "
          + Printable.quote(a.getAccessType()));
    };
  }

  /**
   * A create's topology: one segment set, asked as requisite and preferred; none if empty.
   *
   * @throws IllegalArgumentException naming {@code field} if a key or value is blank
   */
  public static Optional<TopologyRequirement> topology(Map<String, String> segments, String field) {
    if (segments.isEmpty()) {
      return Optional.empty();
    }
    segments.forEach((k, v) -> {
      if (k.isBlank() || v.isBlank()) {
        throw new IllegalArgumentException(field + " must have no blank key or value, got " + Printable.quote(k)
            + "=" + Printable.quote(v));
      }
    });
    return Optional.of(TopologyRequirement.of(segments));
  }

  /** A volume's accessible topologies as the admin API shows them. */
  public static List<Topology> topologies(List<Map<String, String>> accessible) {
    return accessible.stream().map(t -> Topology.newBuilder().putAllSegments(t).build()).toList();
  }

  /**
   * The records as the admin API shows them (no secret or mount flag is in a record), with what the manager
   * says of each now: abnormal, and what its pending work waits for.
   */
  public static List<VolumeInfo> volumes(List<VolumeRecord> records, VolumeManager manager) {
    Map<String, String> abnormal = manager.abnormal();
    Map<String, String> waitingFor = manager.waitingFor();
    return records.stream().map(r -> {
      String key = r.pluginId() + "/" + r.volumeId();
      return volume(r, abnormal.getOrDefault(key, ""), r.hasWork() ? waitingFor.getOrDefault(key, "") : "");
    }).toList();
  }

  static VolumeInfo volume(VolumeRecord r, String abnormal, String waitingFor) {
    VolumeInfo.Builder b = VolumeInfo.newBuilder().setPlugin(r.pluginId()).setVolumeId(r.volumeId())
        .setController(r.controller().name()).setControllerNodeId(r.controllerNodeId())
        .setPending(r.hasWork()).setAbnormal(abnormal).setWaitingFor(waitingFor).setForced(r.forced())
        .setLost(r.hasLost());
    r.nodeExpansion().ifPresent(e -> b.setNodeExpansionPending(true).setNodeExpansionRequiredBytes(e.requiredBytes()));
    r.usages().values().forEach(u -> {
      VolumeUsageInfo.Builder ub = VolumeUsageInfo.newBuilder().setUsage(u.usage().dirName())
          .setStage(r.stageOf(u).name()).setFsType(u.capability().fsType())
          .setStagingPath(r.stagingPathOf(u).map(Object::toString).orElse(""));
      u.allocs().forEach((alloc, phase) -> ub.addAllocs(VolumeAlloc.newBuilder().setAllocId(alloc)
          .setPhase(phase.name()).setTargetPath(r.targetPath(alloc, u.usage()).toString())));
      b.addUsages(ub);
    });
    return b.build();
  }
}
