package dev.csisupervisor.agent.admin;

import com.google.protobuf.Timestamp;
import dev.csisupervisor.admin.v1.Fingerprint;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginEvent;
import dev.csisupervisor.admin.v1.PluginHealth;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.registry.PluginInfo;
import java.time.Instant;

/** Registry values to admin API messages and back (the types only). Stateless. */
public final class ProtoMapper {
  private ProtoMapper() {}

  public static PluginType toProto(dev.csisupervisor.registry.PluginType type) {
    return switch (type) {
      case CSI_CONTROLLER -> PluginType.CSI_CONTROLLER;
      case CSI_NODE -> PluginType.CSI_NODE;
    };
  }

  /** The registry type, or null for {@code PLUGIN_TYPE_UNSPECIFIED} (meaning: all types). */
  public static dev.csisupervisor.registry.PluginType fromProto(PluginType type) {
    return switch (type) {
      case CSI_CONTROLLER -> dev.csisupervisor.registry.PluginType.CSI_CONTROLLER;
      case CSI_NODE -> dev.csisupervisor.registry.PluginType.CSI_NODE;
      case PLUGIN_TYPE_UNSPECIFIED -> null;
      case UNRECOGNIZED -> throw new IllegalArgumentException("unknown plugin type");
    };
  }

  public static Timestamp timestamp(Instant t) {
    return Timestamp.newBuilder().setSeconds(t.getEpochSecond()).setNanos(t.getNano()).build();
  }

  public static Plugin toProto(PluginInfo p) {
    var fp = p.fingerprint();
    return Plugin.newBuilder()
        .setType(toProto(p.type()))
        .setName(p.name())
        .setVersion(p.version())
        .setAllocId(p.allocId())
        .setSocketPath(p.socketPath().toString())
        .putAllOptions(p.options())
        .setFingerprint(Fingerprint.newBuilder()
            .setName(fp.name())
            .setVendorVersion(fp.vendorVersion())
            .putAllManifest(fp.manifest())
            .addAllPluginCapabilities(fp.pluginCapabilities())
            .addAllControllerCapabilities(fp.controllerCapabilities())
            .addAllNodeCapabilities(fp.nodeCapabilities())
            .setNodeId(fp.nodeId())
            .setMaxVolumesPerNode(fp.maxVolumesPerNode())
            .putAllAccessibleTopology(fp.accessibleTopology()))
        .setHealth(PluginHealth.newBuilder()
            .setHealthy(p.health().healthy())
            .setMessage(p.health().message())
            .setSince(timestamp(p.health().since())))
        .setRestored(p.restored())
        .build();
  }

  public static PluginEvent toProto(dev.csisupervisor.registry.PluginEvent e) {
    return PluginEvent.newBuilder()
        .setSequence(e.sequence())
        .setType(toProto(e.type()))
        .setKind(switch (e.kind()) {
          case REGISTERED -> PluginEvent.Kind.REGISTERED;
          case UPDATED -> PluginEvent.Kind.UPDATED;
          case DEREGISTERED -> PluginEvent.Kind.DEREGISTERED;
        })
        .setPlugin(toProto(e.plugin()))
        .setTime(timestamp(e.time()))
        .build();
  }
}
