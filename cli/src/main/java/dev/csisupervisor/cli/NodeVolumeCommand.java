package dev.csisupervisor.cli;

import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code csi-agent volume create|delete|mount|unmount|release|list|stats|expand|gc}: the agent's node volumes.
 * Secrets are read from a file ({@code --secrets-file}: one {@code key=value} per line, {@code #}
 * comments), never taken from the command line, where {@code ps} and shell histories would show them.
 *
 * <p>The models are built with picocli's programmatic API ({@link CommandSpecs}); {@link #spec} builds the group with
 * only the subcommand a command line runs, or with all nine for help and usage errors.
 */
final class NodeVolumeCommand implements Runnable {
  /** The subcommands, in the order help lists them. */
  static final List<String> SUBCOMMANDS = List.of("create", "delete", "mount", "unmount", "release", "list", "stats",
      "expand", "gc");

  private final CommandSpec spec = CommandSpecs.command(this, "volume",
      "Create, mount, unmount, list, inspect, expand and delete node volumes through the agent;"
          + " release an allocation's volumes; find and unmount orphan mounts.");

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing volume command");
  }

  /**
   * The {@code volume} group: with only {@code subcommand} if it is one of {@link #SUBCOMMANDS}, else with all of
   * them.
   */
  static CommandSpec spec(AgentConfigReader configs, String subcommand) {
    CommandSpec spec = new NodeVolumeCommand().spec;
    for (String name : subcommand != null && SUBCOMMANDS.contains(subcommand) ? List.of(subcommand) : SUBCOMMANDS) {
      spec.addSubcommand(name, subcommand(configs, name));
    }
    return spec;
  }

  /** The model of the subcommand {@code name}, one of {@link #SUBCOMMANDS}. */
  private static CommandSpec subcommand(AgentConfigReader configs, String name) {
    return switch (name) {
      case "create" -> new VolumeCreateCommand(configs).spec;
      case "delete" -> new VolumeDeleteCommand(configs).spec;
      case "mount" -> new VolumeMountCommand(configs).spec;
      case "unmount" -> new VolumeUnmountCommand(configs).spec;
      case "release" -> new VolumeReleaseCommand(configs).spec;
      case "list" -> new VolumeListCommand(configs).spec;
      case "stats" -> new VolumeStatsCommand(configs).spec;
      case "expand" -> new VolumeExpandCommand(configs).spec;
      case "gc" -> new VolumeGcCommand(configs).spec;
      default -> throw new IllegalArgumentException("no volume command " + name);
    };
  }
}
