package dev.csisupervisor.agent.cli;

import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.logging.AgentLogging;
import java.util.Map;

/**
 * The {@code csi-agent} program: {@code run}, {@code plugins}, {@code plugin}, {@code events},
 * {@code status}, {@code state inspect}, {@code demo}. Exit codes: 0 ok, 1 failure, 2 usage or
 * config error.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    try {
      AgentLogging.apply(logSettings(args, System.getenv()));
    } catch (IllegalArgumentException e) {
      System.err.println("csi-agent: invalid environment: " + e.getMessage());
      System.exit(CsiAgentCommand.USAGE);
    }
    System.exit(CsiAgentCommand.execute(args));
  }

  /**
   * The logging a command starts with, before any config is read: the daemon logs at info, the
   * CLI commands only warnings so that their output stays readable, the demo only errors (it
   * prints its own progress). {@code CSI_AGENT_LOG_LEVEL} and {@code CSI_AGENT_LOG_FORMAT}
   * override that; {@code run} then applies the config's {@code log:} section under them.
   *
   * @throws IllegalArgumentException if the environment's values are not valid
   */
  static LogSettings logSettings(String[] args, Map<String, String> env) {
    String command = args.length > 0 ? args[0] : "";
    boolean verbose = false;
    for (String a : args) {
      verbose |= a.equals("--verbose") || a.equals("-v");
    }
    LogSettings.Level level = command.equals("run") || verbose ? LogSettings.Level.INFO
        : command.equals("demo") ? LogSettings.Level.ERROR : LogSettings.Level.WARN;
    return LogSettings.DEFAULT.withLevel(level).overriddenBy(env);
  }
}
