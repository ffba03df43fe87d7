package dev.csisupervisor.cli;

import java.nio.file.Path;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Where the agent's admin socket is: {@code --admin-socket}, or from {@code --config}. Made by
 * {@link AdminCommands#factory}, which says how a config file is read.
 */
public final class AdminOptions {
  public static final String ENV = "CSI_AGENT_ADMIN_SOCKET";
  /** A config file to take the socket from when neither flag nor {@link #ENV} says (the launcher of the
   *  package sets it to /etc/csi-agent/agent.yaml). */
  public static final String CONFIG_ENV = "CSI_AGENT_CONFIG";

  @Option(names = "--admin-socket", paramLabel = "PATH",
      description = "The agent's admin socket (default: $" + ENV + ", else from $" + CONFIG_ENV + ").")
  Path adminSocket;

  @Option(names = "--config", paramLabel = "FILE",
      description = "Take the admin socket from this agent config file.")
  Path config;

  private final AgentConfigReader configs;

  public AdminOptions(AgentConfigReader configs) {
    this.configs = java.util.Objects.requireNonNull(configs, "configs");
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
