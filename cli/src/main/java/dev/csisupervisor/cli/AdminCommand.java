package dev.csisupervisor.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * A command that talks to a running agent over its admin socket: finds the socket
 * ({@link AdminOptions}), connects, runs {@link #run}, and turns an unreachable or failing agent
 * into one {@code csi-agent: ...} line and exit code 1. Its picocli model is {@link #spec}, built by the
 * constructors ({@link CommandSpecs}): the options every admin command has here, a command's own in its constructor.
 */
abstract class AdminCommand implements Callable<Integer> {
  final CommandSpec spec;
  private final AdminOptions admin;
  private final OptionSpec json;

  AdminCommand(AgentConfigReader configs, String name, String... description) {
    spec = CommandSpecs.command(this, name, description);
    admin = new AdminOptions(configs).addTo(spec);
    json = CommandSpecs.add(spec, CommandSpecs.flag("--json", "JSON instead of text (events: one object per line)."));
  }

  /** Whether {@code --json} was given. */
  final boolean json() {
    return CommandSpecs.isSet(json);
  }

  /** What the command does with a connected client; returns the exit code. */
  abstract int run(AdminClient client, PrintWriter out, PrintWriter err)
      throws AdminClient.AdminException;

  @Override
  public final Integer call() {
    CommandLine cmd = spec.commandLine();
    try (AdminClient client = AdminClient.connect(admin.socket(cmd))) {
      return run(client, cmd.getOut(), cmd.getErr());
    } catch (AdminClient.AdminException e) {
      cmd.getErr().println("csi-agent: " + e.getMessage());
      return ExitCodes.FAILURE;
    } catch (IllegalArgumentException e) {
      // A bad option value found while building the request (a size, a secrets file): nothing was sent.
      cmd.getErr().println("csi-agent: " + e.getMessage());
      return ExitCodes.USAGE;
    }
  }
}
