package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.agent.config.LogSettings;
import dev.csisupervisor.agent.logging.AgentLogging;
import java.util.Map;
import java.util.Set;

/**
 * The {@code csi-agent} program: {@code run}, {@code plugins}, {@code plugin}, {@code events},
 * {@code status}, {@code state inspect}, {@code demo}. Exit codes: 0 ok, 1 failure, 2 usage or
 * config error.
 */
public final class Main {
  private Main() {}

  /** Command lines that log nothing of their own: the admin-socket commands, help, the version, the training. */
  private static final Set<String> ADMIN_COMMANDS = quietCommands();

  private static Set<String> quietCommands() {
    Set<String> names = new java.util.HashSet<>(AdminCommands.NAMES);
    java.util.Collections.addAll(names, "class-data-training", "", "help", "--help", "-h", "--version", "-V");
    return Set.copyOf(names);
  }

  /** slf4j's provider that drops every message (in slf4j-api itself). */
  static final String NO_LOGGING_PROVIDER = "org.slf4j.helpers.NOP_FallbackServiceProvider";

  public static void main(String[] args) {
    if (quiet(args, System.getenv())) {
      // A short-lived client: not setting up logback (some 220 classes) is a tenth of its start. What it has to
      // say goes to stderr itself; --verbose or CSI_AGENT_LOG_LEVEL bring logging back.
      System.setProperty("slf4j.provider", NO_LOGGING_PROVIDER);
      System.setProperty("slf4j.internal.verbosity", "WARN"); // not the line saying which provider it took
      // picocli's default factory looks for Groovy closures by class name: a lookup that opens the 48 MB jar, whose
      // classes otherwise all come from the class-data archive (~4 ms).
      System.setProperty("picocli.disable.closures", "true");
      if (args.length > 0 && AdminCommands.NAMES.contains(args[0])) {
        AdminCommands.prepareInBackground();
      }
      System.exit(CsiAgentCommand.execute(args));
    }
    try {
      AgentLogging.apply(logSettings(args, System.getenv()));
    } catch (IllegalArgumentException e) {
      System.err.println("csi-agent: invalid environment: " + e.getMessage());
      System.exit(ExitCodes.USAGE);
    }
    System.exit(CsiAgentCommand.execute(args));
  }

  /** Whether {@code args} name an admin-socket command run without a wish for logging. */
  static boolean quiet(String[] args, Map<String, String> env) {
    if (env.containsKey(LogSettings.LEVEL_ENV) || env.containsKey(LogSettings.FORMAT_ENV)
        || System.getProperty("slf4j.provider") != null || System.getProperty("logback.configurationFile") != null) {
      return false;
    }
    for (String a : args) {
      if (a.equals("--verbose") || a.equals("-v")) {
        return false;
      }
    }
    return ADMIN_COMMANDS.contains(args.length > 0 ? args[0] : "");
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
