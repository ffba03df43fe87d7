package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;

/**
 * Builds capability messages from raw enum numbers or generated enum constants.
 *
 * <p>Raw numbers go on the wire as they are ({@code setTypeValue}), so a number the proto does
 * not know (a capability of a newer CSI version) can be sent to test that clients keep it.
 */
final class Capabilities {

  private Capabilities() {
  }

  static List<PluginCapability> pluginServices(int... types) {
    Objects.requireNonNull(types, "pluginCapabilities");
    List<PluginCapability> caps = new ArrayList<>(types.length);
    for (int type : types) {
      caps.add(PluginCapability.newBuilder()
          .setService(PluginCapability.Service.newBuilder().setTypeValue(type))
          .build());
    }
    return caps;
  }

  static List<PluginCapability> pluginServices(PluginCapability.Service.Type... types) {
    Objects.requireNonNull(types, "pluginCapabilities");
    int[] values = new int[types.length];
    for (int i = 0; i < types.length; i++) {
      values[i] = number("pluginCapabilities", types[i]);
    }
    return pluginServices(values);
  }

  static List<ControllerServiceCapability> controller(int... types) {
    Objects.requireNonNull(types, "controllerCapabilities");
    List<ControllerServiceCapability> caps = new ArrayList<>(types.length);
    for (int type : types) {
      caps.add(ControllerServiceCapability.newBuilder()
          .setRpc(ControllerServiceCapability.RPC.newBuilder().setTypeValue(type))
          .build());
    }
    return caps;
  }

  static List<ControllerServiceCapability> controller(ControllerServiceCapability.RPC.Type... types) {
    Objects.requireNonNull(types, "controllerCapabilities");
    int[] values = new int[types.length];
    for (int i = 0; i < types.length; i++) {
      values[i] = number("controllerCapabilities", types[i]);
    }
    return controller(values);
  }

  static List<NodeServiceCapability> node(int... types) {
    Objects.requireNonNull(types, "nodeCapabilities");
    List<NodeServiceCapability> caps = new ArrayList<>(types.length);
    for (int type : types) {
      caps.add(NodeServiceCapability.newBuilder()
          .setRpc(NodeServiceCapability.RPC.newBuilder().setTypeValue(type))
          .build());
    }
    return caps;
  }

  static List<NodeServiceCapability> node(NodeServiceCapability.RPC.Type... types) {
    Objects.requireNonNull(types, "nodeCapabilities");
    int[] values = new int[types.length];
    for (int i = 0; i < types.length; i++) {
      values[i] = number("nodeCapabilities", types[i]);
    }
    return node(values);
  }

  /** Copies a caller's messages, refusing nulls with the field's name. */
  static <T> List<T> copy(String field, Collection<? extends T> caps) {
    Objects.requireNonNull(caps, field);
    List<T> copy = new ArrayList<>(caps.size());
    for (T cap : caps) {
      copy.add(Objects.requireNonNull(cap, () -> field + " must not contain null: " + caps));
    }
    return List.copyOf(copy);
  }

  private static int number(String field, com.google.protobuf.ProtocolMessageEnum type) {
    Objects.requireNonNull(type, () -> field + " must not contain null");
    // UNRECOGNIZED has no number: getNumber() would throw an unhelpful message.
    if (type instanceof Enum<?> e && e.name().equals("UNRECOGNIZED")) {
      throw new IllegalArgumentException(
          field + " must not contain UNRECOGNIZED; pass the raw int value instead: " + type);
    }
    return type.getNumber();
  }
}
