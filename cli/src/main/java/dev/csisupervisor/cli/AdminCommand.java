package dev.csisupervisor.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * A command that talks to a running agent over its admin socket: finds the socket
 * ({@link AdminOptions}), connects, runs {@link #run}, and turns an unreachable or failing agent
 * into one {@code csi-agent: ...} line and exit code 1.
 */
abstract class AdminCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Mixin
  AdminOptions admin; // made by AdminCommands.factory

  @Option(names = "--json", description = "JSON instead of text (events: one object per line).")
  boolean json;

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
