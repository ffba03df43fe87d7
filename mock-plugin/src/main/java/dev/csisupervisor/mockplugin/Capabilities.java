package dev.csisupervisor.mockplugin;

import com.google.protobuf.ProtocolMessageEnum;
import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.function.IntFunction;

/**
 * One kind of capability message ({@code C}, typed by the enum {@code E}), built from raw enum
 * numbers or generated enum constants; the three kinds are the constants of this class.
 *
 * <p>Raw numbers go on the wire as they are ({@code setTypeValue}), so a number the proto does
 * not know (a capability of a newer CSI version) can be sent to test that clients keep it.
 * Argument errors name the builder field of the kind, e.g. {@code controllerCapabilities}.
 */
final class Capabilities<C, E extends ProtocolMessageEnum> {

  /** Plugin capabilities of the {@code Service} kind. */
  static final Capabilities<PluginCapability, PluginCapability.Service.Type> PLUGIN =
      new Capabilities<>("pluginCapabilities", type -> PluginCapability.newBuilder()
          .setService(PluginCapability.Service.newBuilder().setTypeValue(type)).build());
  static final Capabilities<ControllerServiceCapability, ControllerServiceCapability.RPC.Type> CONTROLLER =
      new Capabilities<>("controllerCapabilities", type -> ControllerServiceCapability.newBuilder()
          .setRpc(ControllerServiceCapability.RPC.newBuilder().setTypeValue(type)).build());
  static final Capabilities<NodeServiceCapability, NodeServiceCapability.RPC.Type> NODE =
      new Capabilities<>("nodeCapabilities", type -> NodeServiceCapability.newBuilder()
          .setRpc(NodeServiceCapability.RPC.newBuilder().setTypeValue(type)).build());

  private final String field;
  private final IntFunction<C> ofNumber;

  private Capabilities(String field, IntFunction<C> ofNumber) {
    this.field = field;
    this.ofNumber = ofNumber;
  }

  /** One capability per raw enum number, unknown numbers included. */
  List<C> of(int... types) {
    Objects.requireNonNull(types, field);
    List<C> caps = new ArrayList<>(types.length);
    for (int type : types) {
      caps.add(ofNumber.apply(type));
    }
    return caps;
  }

  /** One capability per enum constant; {@code UNRECOGNIZED} is refused (it has no number). */
  @SafeVarargs
  final List<C> of(E... types) {
    Objects.requireNonNull(types, field);
    int[] values = new int[types.length];
    for (int i = 0; i < types.length; i++) {
      values[i] = number(types[i]);
    }
    return of(values);
  }

  /** Copies a caller's messages, refusing nulls with the field's name. */
  List<C> copy(Collection<? extends C> caps) {
    Objects.requireNonNull(caps, field);
    List<C> copy = new ArrayList<>(caps.size());
    for (C cap : caps) {
      copy.add(Objects.requireNonNull(cap, () -> field + " must not contain null: " + caps));
    }
    return List.copyOf(copy);
  }

  private int number(E type) {
    Objects.requireNonNull(type, () -> field + " must not contain null");
    // UNRECOGNIZED has no number: getNumber() would throw an unhelpful message.
    if (type instanceof Enum<?> e && e.name().equals("UNRECOGNIZED")) {
      throw new IllegalArgumentException(
          field + " must not contain UNRECOGNIZED; pass the raw int value instead: " + type);
    }
    return type.getNumber();
  }
}
