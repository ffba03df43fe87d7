package dev.csisupervisor.cli;

import java.nio.file.Path;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * Where the agent's admin socket is: {@code --admin-socket}, or from {@code --config} (read by the
 * {@link AgentConfigReader} the program gives {@link AdminCommands}); {@link #addTo} puts both options on a command.
 */
public final class AdminOptions {
  public static final String ENV = "CSI_AGENT_ADMIN_SOCKET";
  /** A config file to take the socket from when neither flag nor {@link #ENV} says (the launcher of the
   *  package sets it to /etc/csi-agent/agent.yaml). */
  public static final String CONFIG_ENV = "CSI_AGENT_CONFIG";

  private final AgentConfigReader configs;
  /** The options once {@link #addTo} put them on a command; null before (neither given). */
  private OptionSpec adminSocket;
  private OptionSpec config;

  public AdminOptions(AgentConfigReader configs) {
    this.configs = java.util.Objects.requireNonNull(configs, "configs");
  }

  /** Adds {@code --admin-socket} and {@code --config} to {@code spec}; this, to ask for the socket they give. */
  AdminOptions addTo(CommandSpec spec) {
    adminSocket = CommandSpecs.add(spec, CommandSpecs.option("--admin-socket", "PATH", Path.class,
        "The agent's admin socket (default: $" + ENV + ", else from $" + CONFIG_ENV + ")."));
    config = CommandSpecs.add(spec, CommandSpecs.option("--config", "FILE", Path.class,
        "Take the admin socket from this agent config file."));
    return this;
  }

  /**
   * The socket to talk to.
   *
   * @throws CommandLine.ParameterException (exit 2) if none is given, or both, or the config is
   *     invalid
   */
  Path socket(CommandLine cmd) {
    return socket(cmd, System::getenv);
  }

  /** {@link #socket(CommandLine)} with {@code env} for the process environment. */
  public Path socket(CommandLine cmd, Function<String, String> env) {
    Path adminSocket = this.adminSocket == null ? null : CommandSpecs.value(this.adminSocket);
    Path config = this.config == null ? null : CommandSpecs.value(this.config);
    if (adminSocket != null && config != null) {
      throw new CommandLine.ParameterException(cmd,
          "Give either --admin-socket or --config, not both");
    }
    if (adminSocket != null) {
      return adminSocket.toAbsolutePath();
    }
    if (config != null) {
      return fromConfig(cmd, config);
    }
    String socketEnv = env.apply(ENV);
    if (socketEnv != null && !socketEnv.isBlank()) {
      return Path.of(socketEnv).toAbsolutePath();
    }
    String configEnv = env.apply(CONFIG_ENV);
    if (configEnv != null && !configEnv.isBlank()) {
      return fromConfig(cmd, Path.of(configEnv));
    }
    throw new CommandLine.ParameterException(cmd, "Which agent? Give --admin-socket PATH or --config FILE"
        + " (or set " + ENV + " or " + CONFIG_ENV + ")");
  }

  private Path fromConfig(CommandLine cmd, Path file) {
    try {
      return configs.adminSocket(file);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(cmd, e.getMessage());
    }
  }
}
