package dev.csisupervisor.agent.cli;

import dev.csisupervisor.agent.Agent;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The top-level {@code csi-agent} command; see {@link #execute}. */
@Command(name = "csi-agent", mixinStandardHelpOptions = true,
    versionProvider = CsiAgentCommand.Version.class,
    description = "Launches, supervises and serves CSI plugins on one node.",
    subcommands = {RunCommand.class, ReloadCommand.class, PluginsCommand.class, PluginCommand.class,
        EventsCommand.class, StatusCommand.class, StateCommand.class, DemoCommand.class,
        ClusterCommand.class, VolumeCommand.class,
        CommandLine.HelpCommand.class},
    footer = {"", "Exit codes: 0 ok, 1 failure, 2 usage or config error."})
public final class CsiAgentCommand implements Runnable {
  public static final int OK = 0;
  public static final int FAILURE = 1;
  public static final int USAGE = 2;

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing command");
  }

  /** Runs the CLI with the process's stdout/stderr; returns the exit code. */
  public static int execute(String... args) {
    return commandLine(new PrintWriter(System.out, true), new PrintWriter(System.err, true))
        .execute(args);
  }

  static CommandLine commandLine(PrintWriter out, PrintWriter err) {
    CommandLine cl = new CommandLine(new CsiAgentCommand())
        .setCaseInsensitiveEnumValuesAllowed(true)
        .setOut(out)
        .setErr(err);
    // picocli's defaults are the agent's: 2 for usage errors, 1 for failures.
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      cmd.getErr().println("csi-agent: " + (e.getMessage() == null ? e.toString()
          : e.getMessage()));
      return FAILURE;
    });
    return cl;
  }

  /** The version from the jar manifest. */
  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"csi-agent " + Agent.version()};
    }
  }
}
