package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.Agent;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.agent.config.AdminSocketReader;
import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.cli.ExitCodes;
import java.nio.file.Path;
import java.io.PrintWriter;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The top-level {@code csi-agent} command; see {@link #execute}. */
@Command(name = "csi-agent", mixinStandardHelpOptions = true,
    versionProvider = CsiAgentCommand.Version.class,
    description = "Launches, supervises and serves CSI plugins on one node.",
    footer = {"", "Exit codes: 0 ok, 1 failure, 2 usage or config error."})
public final class CsiAgentCommand implements Runnable {
  /**
   * The subcommands, in the order help lists them: the daemon's own and the CLI's admin commands. A command line gets only the one its first argument names
   * (with help, all): picocli reads each one's annotations by reflection, and its classes cannot be put in a
   * class-data archive (they are Java 5 bytecode), so every unused command costs each CLI call milliseconds.
   */
  private static final Map<String, Supplier<Object>> COMMANDS = commands();

  private static Map<String, Supplier<Object>> commands() {
    Map<String, Supplier<Object>> m = new LinkedHashMap<>();
    m.put("run", RunCommand::new);
    m.put("reload", AdminCommands::reload);
    m.put("plugins", AdminCommands::plugins);
    m.put("plugin", AdminCommands::plugin);
    m.put("events", AdminCommands::events);
    m.put("status", AdminCommands::status);
    m.put("state", StateCommand::new);
    m.put("demo", DemoCommand::new);
    m.put("cluster", ClusterCommand::new);
    m.put("volume", AdminCommands::volume);
    m.put("help", CommandLine.HelpCommand::new);
    m.put("class-data-training", ClassDataTrainingCommand::new);
    return Collections.unmodifiableMap(m);
  }

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

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
    CommandLine cl = new CommandLine(new CsiAgentCommand(), AdminCommands.factory(CsiAgentCommand::adminSocketOf));
    String first = args.length > 0 ? args[0] : "";
    if (COMMANDS.containsKey(first) && !first.equals("help")) {
      cl.addSubcommand(first, COMMANDS.get(first).get());
    } else {
      COMMANDS.forEach((name, command) -> cl.addSubcommand(name, command.get()));
    }
    cl.setCaseInsensitiveEnumValuesAllowed(true)
        .setOut(out)
        .setErr(err);
    // picocli's defaults are the agent's: 2 for usage errors, 1 for failures.
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      cmd.getErr().println("csi-agent: " + (e.getMessage() == null ? e.toString()
          : e.getMessage()));
      return ExitCodes.FAILURE;
    });
    return cl;
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
