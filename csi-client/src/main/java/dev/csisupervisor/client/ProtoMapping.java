package dev.csisupervisor.client;

import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Message;
import dev.csisupervisor.common.Values;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.GetPluginCapabilitiesResponse;
import dev.csisupervisor.csi.v1.GetPluginInfoResponse;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import dev.csisupervisor.csi.v1.ProbeResponse;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import java.util.stream.Collectors;

/**
 * Turns CSI responses into the client's values, naming capabilities as {@link CsiCapabilities}
 * documents and checking the fields CSI requires.
 */
final class ProtoMapping {
  private ProtoMapping() {}

  static ProbeResult probe(ProbeResponse response) {
    // CSI: "If not present, the caller SHALL assume that the plugin is in a ready state".
    return ProbeResult.of(!response.hasReady() || response.getReady().getValue());
  }

  static CsiPluginInfo pluginInfo(Path socket, String method, GetPluginInfoResponse response)
      throws InvalidResponseException {
    String name = response.getName();
    if (name.isBlank()) {
      throw new InvalidResponseException(socket, method, describeBlank("name", name) + ", but CSI requires it");
    }
    return new CsiPluginInfo(name, response.getVendorVersion(), response.getManifestMap());
  }

  static CsiNodeInfo nodeInfo(Path socket, String method, NodeGetInfoResponse response)
      throws InvalidResponseException {
    String nodeId = response.getNodeId();
    if (nodeId.isBlank()) {
      throw new InvalidResponseException(socket, method, describeBlank("node_id", nodeId) + ", but CSI requires it");
    }
    long max = response.getMaxVolumesPerNode();
    if (max < 0) {
      throw new InvalidResponseException(
          socket, method, "max_volumes_per_node is " + max + ", but CSI forbids negative values");
    }
    return new CsiNodeInfo(nodeId, max, response.getAccessibleTopology().getSegmentsMap());
  }

  static Set<String> pluginCapabilities(GetPluginCapabilitiesResponse response) {
    Set<String> names = new LinkedHashSet<>();
    for (PluginCapability capability : response.getCapabilitiesList()) {
      switch (capability.getTypeCase()) {
        case SERVICE -> names.add("SERVICE:" + enumName(
            PluginCapability.Service.Type.getDescriptor(), capability.getService().getTypeValue()));
        case VOLUME_EXPANSION -> names.add("VOLUME_EXPANSION:" + enumName(
            PluginCapability.VolumeExpansion.Type.getDescriptor(),
            capability.getVolumeExpansion().getTypeValue()));
        default -> addUnknownType(names, capability);
      }
    }
    return Values.copyOf(names, "pluginCapabilities");
  }

  static Set<String> controllerCapabilities(ControllerGetCapabilitiesResponse response) {
    return rpcCapabilities(response.getCapabilitiesList(), ControllerServiceCapability::hasRpc,
        capability -> capability.getRpc().getTypeValue(), ControllerServiceCapability.RPC.Type.getDescriptor(),
        "controllerCapabilities");
  }

  static Set<String> nodeCapabilities(NodeGetCapabilitiesResponse response) {
    return rpcCapabilities(response.getCapabilitiesList(), NodeServiceCapability::hasRpc,
        capability -> capability.getRpc().getTypeValue(), NodeServiceCapability.RPC.Type.getDescriptor(),
        "nodeCapabilities");
  }

  /**
   * Controller and node capabilities alike (two generated types with the same layout): an
   * {@code rpc} capability by its RPC type's name, any other by {@link #addUnknownType}.
   */
  private static <C extends Message> Set<String> rpcCapabilities(List<C> capabilities, Predicate<C> hasRpc,
      ToIntFunction<C> rpcTypeValue, EnumDescriptor rpcTypes, String field) {
    Set<String> names = new LinkedHashSet<>();
    for (C capability : capabilities) {
      if (hasRpc.test(capability)) {
        names.add(enumName(rpcTypes, rpcTypeValue.applyAsInt(capability)));
      } else {
        addUnknownType(names, capability);
      }
    }
    return Values.copyOf(names, field);
  }

  /** The enum constant's name, or {@code UNKNOWN(<n>)} for a number this build does not know. */
  static String enumName(EnumDescriptor type, int number) {
    EnumValueDescriptor value = type.findValueByNumber(number);
    return value == null ? "UNKNOWN(" + number + ")" : value.getName();
  }

  /**
   * A capability with none of the oneof cases we know: a newer plugin's capability type, which
   * protobuf keeps as unknown fields. Kept by field number; an empty message says nothing.
   */
  private static void addUnknownType(Set<String> names, Message capability) {
    Set<Integer> fields = capability.getUnknownFields().asMap().keySet();
    if (!fields.isEmpty()) {
      names.add("UNKNOWN_TYPE(" + fields.stream().map(String::valueOf).collect(Collectors.joining(",")) + ")");
    }
  }

  private static String describeBlank(String field, String value) {
    return value.isEmpty() ? field + " is empty" : field + " is blank ('" + value + "')";
  }
}
