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
 * {@code csi-agent class-data-training --admin-socket PATH [--config FILE]}: what the launcher runs once, to list
 * the classes the class-data archive of every later CLI command holds, against a training agent (no plugins, in
 * a temporary directory): in one JVM, each admin command's request and output, text and JSON, and, with
 * {@code --config}, each again finding the agent through that config file as {@code --config} and
 * {@code $CSI_AGENT_CONFIG} do. (The training agent's own JVM makes the archive of {@code run}.) Hidden: not for
 * people.
 */
@Command(name = "class-data-training", hidden = true,
    description = "Runs each admin command once against an agent, for the launcher's class-data archive.")
final class ClassDataTrainingCommand implements Callable<Integer> {

  @Option(names = "--admin-socket", required = true, paramLabel = "PATH", description = "The training agent.")
  Path adminSocket;

  @Option(names = "--config", paramLabel = "FILE", description = "The training agent's config file.")
  Path config;

  /** Each command, as users call it; those that fail against an agent without plugins or volumes say so. */
  private static final List<List<String>> COMMANDS = List.of(List.of("plugins"), List.of("plugins", "--json"),
      List.of("status"), List.of("status", "--json"), List.of("events"), List.of("events", "--json"),
      List.of("volume", "list"), List.of("volume", "list", "--json"), List.of("plugin", "node", "class-data-training"),
      List.of("volume", "mount", "--plugin", "class-data-training", "--volume", "v", "--alloc", "a"));

  @Override
  public Integer call() {
    PrintWriter nowhere = new PrintWriter(OutputStream.nullOutputStream(), true);
    int failed = 0;
    List<String> finders = config == null ? List.of("--admin-socket=" + adminSocket)
        : List.of("--admin-socket=" + adminSocket, "--config=" + config);
    for (String finder : finders) {
      for (List<String> args : COMMANDS) {
        String[] argv = new String[args.size() + 1];
        args.toArray(argv);
        argv[args.size()] = finder;
        int code = CsiAgentCommand.commandLine(nowhere, nowhere, argv).execute(argv);
        boolean expectedToFail = args.get(0).equals("plugin") || args.contains("mount"); // nothing is there
        failed += code == ExitCodes.OK || expectedToFail ? 0 : 1;
      }
    }
    return failed == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
  }
}
