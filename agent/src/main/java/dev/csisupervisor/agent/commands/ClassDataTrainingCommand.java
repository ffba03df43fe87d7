package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.ExitCodes;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code csi-agent class-data-training --admin-socket PATH}: what the launcher runs once, under
 * {@code -XX:ArchiveClassesAtExit}, against a training agent (no plugins, in a temporary directory) to make the
 * class-data archive every later CLI command starts from: in one JVM, each admin command's request and output,
 * text and JSON. (The training agent's own JVM makes the archive of {@code run} the same way.) Hidden: not for
 * people.
 */
@Command(name = "class-data-training", hidden = true,
    description = "Runs each admin command once against an agent, for the launcher's class-data archive.")
final class ClassDataTrainingCommand implements Callable<Integer> {

  @Option(names = "--admin-socket", required = true, paramLabel = "PATH", description = "The training agent.")
  Path adminSocket;

  @Override
  public Integer call() {
    String socket = "--admin-socket=" + adminSocket;
    PrintWriter nowhere = new PrintWriter(OutputStream.nullOutputStream(), true);
    int failed = 0;
    for (List<String> args : List.of(List.of("plugins"), List.of("plugins", "--json"), List.of("status"),
        List.of("status", "--json"), List.of("events"), List.of("events", "--json"), List.of("volume", "list"),
        List.of("plugin", "class-data-training"))) {
      String[] argv = new String[args.size() + 1];
      args.toArray(argv);
      argv[args.size()] = socket;
      int code = CsiAgentCommand.commandLine(nowhere, nowhere, argv).execute(argv);
      failed += code == ExitCodes.OK || args.get(0).equals("plugin") ? 0 : 1; // that plugin is not there
    }
    return failed == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
  }
}
