package dev.csisupervisor.agent.cli;

import dev.csisupervisor.admin.v1.PluginType;
import java.util.Locale;
import picocli.CommandLine;

/** Parses {@code controller}, {@code node} (or {@code csi_controller}, {@code csi_node}). */
final class TypeOption implements CommandLine.ITypeConverter<PluginType> {
  @Override
  public PluginType convert(String value) {
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "controller", "csi_controller", "csi-controller" -> PluginType.CSI_CONTROLLER;
      case "node", "csi_node", "csi-node" -> PluginType.CSI_NODE;
      default -> throw new CommandLine.TypeConversionException(
          "'" + value + "' is not a plugin type (use controller or node)");
    };
  }
}
