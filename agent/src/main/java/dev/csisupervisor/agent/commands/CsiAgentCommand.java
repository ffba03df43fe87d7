package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.Agent;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.AdminSocketReader;
import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.cli.AgentConfigReader;
import dev.csisupervisor.cli.CommandSpecs;
import dev.csisupervisor.cli.ExitCodes;
import java.nio.file.Path;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The top-level {@code csi-agent} command; see {@link #execute}. Its model, like the admin commands', is built with
 * picocli's programmatic API ({@link CommandSpecs}): reading annotations by reflection was most of a CLI call's
 * start. The daemon's own commands ({@code run}, {@code state}, {@code demo}, {@code cluster}) keep their annotations.
 */
public final class CsiAgentCommand implements Runnable {
  /**
   * The subcommands, in the order help lists them: the daemon's own and the CLI's admin commands. A command line gets
   * only the one its first argument names (with help, all), and {@code volume} only the subcommand its second names:
   * every model built for nothing costs each CLI call milliseconds. Made by {@link #command}, a switch rather than a
   * map of constructor references: a lambda per command is as many bootstraps at every start, and one implementing
   * picocli's (Java 5) interfaces cannot be put in the class-data archive, which then has the JVM open the jar for it.
   */
  private static final List<String> COMMANDS = List.of("run", "reload", "plugins", "plugin", "events", "status",
      "state", "demo", "cluster", "volume", "help", "class-data-training");

  /**
   * A new instance (or model) of the subcommand {@code name}, one of {@link #COMMANDS}, for a command line whose
   * next word is {@code next} (null if none, or for help).
   */
  private static Object command(String name, String next) {
    AgentConfigReader configs = CsiAgentCommand::adminSocketOf;
    return switch (name) {
      case "run" -> new RunCommand();
      case "reload" -> AdminCommands.reload(configs);
      case "plugins" -> AdminCommands.plugins(configs);
      case "plugin" -> AdminCommands.plugin(configs);
      case "events" -> AdminCommands.events(configs);
      case "status" -> AdminCommands.status(configs);
      case "state" -> new StateCommand();
      case "demo" -> new DemoCommand();
      case "cluster" -> new ClusterCommand();
      case "volume" -> AdminCommands.volume(configs, next);
      case "help" -> new CommandLine.HelpCommand();
      case "class-data-training" -> new ClassDataTrainingCommand();
      default -> throw new IllegalArgumentException("no command " + name);
    };
  }

  private final CommandSpec spec = CommandSpecs.command(this, "csi-agent",
      "Launches, supervises and serves CSI plugins on one node.");

  private CsiAgentCommand() {
    spec.versionProvider(new Version());
    spec.usageMessage().footer("", "Exit codes: 0 ok, 1 failure, 2 usage or config error.");
  }

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing command");
  }

  /** Runs the CLI with the process's stdout/stderr; returns the exit code. */
  public static int execute(String... args) {
    return commandLine(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args)
        .execute(args);
  }

  /** The command line with every subcommand. */
  static CommandLine commandLine(PrintWriter out, PrintWriter err) {
    return commandLine(out, err, new String[0]);
  }

  /** The command line for {@code args}: only the subcommand they name, if they name one other than help. */
  static CommandLine commandLine(PrintWriter out, PrintWriter err, String[] args) {
    CommandLine cl = new CommandLine(new CsiAgentCommand().spec);
    String first = args.length > 0 ? args[0] : "";
    if (COMMANDS.contains(first) && !first.equals("help")) {
      cl.addSubcommand(first, command(first, args.length > 1 ? args[1] : null));
    } else {
      for (String name : COMMANDS) {
        cl.addSubcommand(name, command(name, null));
      }
    }
    cl.setCaseInsensitiveEnumValuesAllowed(true)
        .setOut(out)
        .setErr(err);
    cl.setExecutionExceptionHandler(new Failures());
    return cl;
  }

  /** picocli's defaults are the agent's: 2 for usage errors, 1 for failures, said in one line. */
  private static final class Failures implements CommandLine.IExecutionExceptionHandler {
    @Override
    public int handleExecutionException(Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
      cmd.getErr().println("csi-agent: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
      return ExitCodes.FAILURE;
    }
  }

  /**
   * The admin commands' {@code --config}: the admin socket the daemon would serve with that config (read without
   * the rest of the file: {@link AdminSocketReader}).
   */
  static Path adminSocketOf(Path configFile) {
    try {
      return AdminSocketReader.adminSocket(configFile);
    } catch (ConfigException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
  }

  /** The version from the jar manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"csi-agent " + Agent.version()};
    }
  }
}
