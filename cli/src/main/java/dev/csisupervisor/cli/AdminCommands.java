package dev.csisupervisor.cli;

import picocli.CommandLine.Model.CommandSpec;

/**
 * The commands that talk to a running agent over its admin socket ({@code reload}, {@code plugins},
 * {@code plugin}, {@code events}, {@code status}, {@code volume}), for a program to add to its own command
 * line: each a picocli model ({@link CommandSpec}) whose {@code --config} is read by the program's
 * {@code configs}. They know the admin API and how to print it, nothing of the daemon.
 */
public final class AdminCommands {
  private AdminCommands() {}

  /** The names of these commands. */
  public static final java.util.Set<String> NAMES = java.util.Set.of("reload", "plugins", "plugin", "events", "status",
      "volume");

  /**
   * Starts the one-time set-up of the JDK and protobuf that a call to the agent needs on a second thread, so that
   * it overlaps with building and parsing the command line: for a short-lived process about to run one of these
   * commands. What the commands do and print is the same without it, only later.
   */
  public static void prepareInBackground() {
    AheadOfUse.begin();
  }

  public static CommandSpec reload(AgentConfigReader configs) {
    return new ReloadCommand(configs).spec;
  }

  public static CommandSpec plugins(AgentConfigReader configs) {
    return new PluginsCommand(configs).spec;
  }

  public static CommandSpec plugin(AgentConfigReader configs) {
    return new PluginCommand(configs).spec;
  }

  public static CommandSpec events(AgentConfigReader configs) {
    return new EventsCommand(configs).spec;
  }

  public static CommandSpec status(AgentConfigReader configs) {
    return new StatusCommand(configs).spec;
  }

  /** {@code volume} with all its subcommands (what its help lists). */
  public static CommandSpec volume(AgentConfigReader configs) {
    return NodeVolumeCommand.spec(configs, null);
  }

  /**
   * {@code volume} for a command line whose word after {@code volume} is {@code subcommand}: if that names one of
   * its subcommands, with only that one (a command line runs one; the others' models would be built for nothing),
   * else with all (for its help, and for the usage error that lists them).
   */
  public static CommandSpec volume(AgentConfigReader configs, String subcommand) {
    return NodeVolumeCommand.spec(configs, subcommand);
  }
}
