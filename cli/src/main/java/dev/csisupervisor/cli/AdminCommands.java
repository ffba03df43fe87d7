package dev.csisupervisor.cli;

import picocli.CommandLine;

/**
 * The commands that talk to a running agent over its admin socket ({@code reload}, {@code plugins},
 * {@code plugin}, {@code events}, {@code status}, {@code volume}), for a program to add to its own command
 * line. They know the admin API and how to print it, nothing of the daemon.
 */
public final class AdminCommands {
  private AdminCommands() {}

  /**
   * picocli's factory for a command line holding these commands: every command's {@link AdminOptions} reads
   * config files with {@code configs}; everything else is made as picocli makes it.
   */
  public static CommandLine.IFactory factory(AgentConfigReader configs) {
    CommandLine.IFactory fallback = CommandLine.defaultFactory();
    return new CommandLine.IFactory() {
      @Override
      public <K> K create(Class<K> type) throws Exception {
        return type == AdminOptions.class ? type.cast(new AdminOptions(configs)) : fallback.create(type);
      }
    };
  }

  public static Object reload() {
    return new ReloadCommand();
  }

  public static Object plugins() {
    return new PluginsCommand();
  }

  public static Object plugin() {
    return new PluginCommand();
  }

  public static Object events() {
    return new EventsCommand();
  }

  public static Object status() {
    return new StatusCommand();
  }

  public static Object volume() {
    return new VolumeCommand();
  }
}
