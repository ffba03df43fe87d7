package dev.csisupervisor.registry;

import dev.csisupervisor.common.Printable;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The kind of plugin a registration is for. A monolith plugin registers once per type. Each type has a
 * stable short {@link #id()} used in store keys, records and logs; new types may be added later without
 * changing existing ids.
 */
public enum PluginType {
  /** A CSI controller service. */
  CSI_CONTROLLER("csi-controller"),
  /** A CSI node service. */
  CSI_NODE("csi-node");

  private final String id;

  PluginType(String id) {
    this.id = id;
  }

  /** The stable short id, e.g. {@code "csi-node"}. */
  public String id() {
    return id;
  }

  /** The word operators read in logs, metrics and tables: {@code "controller"} or {@code "node"}. */
  public String label() {
    return id.substring("csi-".length());
  }

  /**
   * Parses a short id ({@code "csi-node"}) or an enum constant name ({@code "CSI_NODE"}), ignoring case.
   *
   * @throws IllegalArgumentException naming the value and the accepted ids
   */
  public static PluginType parse(String value) {
    if (value != null) {
      for (PluginType t : values()) {
        if (t.id.equalsIgnoreCase(value) || t.name().equalsIgnoreCase(value)) {
          return t;
        }
      }
    }
    throw new IllegalArgumentException("unknown plugin type " + (value == null ? "null" : Printable.quote(value))
        + "; expected one of " + Arrays.stream(values()).map(PluginType::id).collect(Collectors.joining(", ")));
  }
}
