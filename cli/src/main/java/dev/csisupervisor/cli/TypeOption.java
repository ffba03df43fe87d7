package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.PluginType;
import java.util.Locale;
import picocli.CommandLine;

/**
 * Parses {@code controller}, {@code node} (or {@code csi_controller}, {@code csi_node}). Where a
 * command takes a plugin's config type, {@link #parseKind} also accepts {@code monolith}.
 */
public final class TypeOption implements CommandLine.ITypeConverter<PluginType> {
  @Override
  public PluginType convert(String value) {
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "controller", "csi_controller", "csi-controller" -> PluginType.CSI_CONTROLLER;
      case "node", "csi_node", "csi-node" -> PluginType.CSI_NODE;
      default -> throw new CommandLine.TypeConversionException(
          "'" + value + "' is not a plugin type (use controller or node)");
    };
  }

  /** {@code --type controller|node}: only plugins of this type (unspecified: both). */
  static CommandLine.Model.OptionSpec.Builder option() {
    return CommandSpecs.option("--type", "controller|node", PluginType.class, "Only this type.")
        .converters(new TypeOption()).initialValue(PluginType.PLUGIN_TYPE_UNSPECIFIED);
  }

  /** The registry types a config type names: a monolith is registered as both. */
  static java.util.List<PluginType> parseKind(String value) {
    if (value.toLowerCase(Locale.ROOT).equals("monolith")) {
      return java.util.List.of(PluginType.CSI_CONTROLLER, PluginType.CSI_NODE);
    }
    try {
      return java.util.List.of(new TypeOption().convert(value));
    } catch (CommandLine.TypeConversionException e) {
      throw new CommandLine.TypeConversionException(
          "'" + value + "' is not a plugin type (use controller, node or monolith)");
    }
  }

  /** The registry types of a config type (one, or two for a monolith). */
  record Kinds(java.util.List<PluginType> types) {
    Kinds {
      types = java.util.List.copyOf(types);
    }
  }

  /** For commands taking controller, node or monolith. */
  static final class Kind implements CommandLine.ITypeConverter<Kinds> {
    @Override
    public Kinds convert(String value) {
      return new Kinds(parseKind(value));
    }
  }
}
