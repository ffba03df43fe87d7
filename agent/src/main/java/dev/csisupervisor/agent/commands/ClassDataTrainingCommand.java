package dev.csisupervisor.agent.commands;

import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.cli.AdminClient;
import dev.csisupervisor.cli.AdminCommands;
import dev.csisupervisor.cli.ExitCodes;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code csi-agent class-data-training --admin-socket PATH [--config FILE] [--plugin ID]}: what the launcher runs
 * once, to list the classes the class-data archive of every later CLI command holds, against a training agent (in
 * a temporary directory): in one JVM, each admin command's request and output, text and JSON, and, with
 * {@code --config}, each again finding the agent through that config file as {@code --config} and
 * {@code $CSI_AGENT_CONFIG} do. With {@code --plugin} (the training agent's one plugin, a monolith) it first waits
 * for it to be registered and makes a volume of it to mount, so that the answers hold what real ones hold. (The
 * training agent's own JVM makes the archive of {@code run}.) Hidden: not for people.
 */
@Command(name = "class-data-training", hidden = true,
    description = "Runs each admin command once against an agent, for the launcher's class-data archive.")
final class ClassDataTrainingCommand implements Callable<Integer> {

  @Option(names = "--admin-socket", required = true, paramLabel = "PATH", description = "The training agent.")
  Path adminSocket;

  @Option(names = "--config", paramLabel = "FILE", description = "The training agent's config file.")
  Path config;

  @Option(names = "--plugin", paramLabel = "ID", description = "The training agent's plugin (a monolith), if any.")
  String plugin;

  @Override
  public Integer call() throws Exception {
    PrintWriter nowhere = new PrintWriter(OutputStream.nullOutputStream(), true);
    AdminCommands.prepareInBackground(); // as Main does for every admin command: its classes in the archive too
    if (plugin != null) {
      waitForThePlugin();
    }
    String name = plugin == null ? "class-data-training" : plugin; // without one: those commands' errors are trained
    int failed = 0;
    List<String> finders = config == null ? List.of("--admin-socket=" + adminSocket)
        : List.of("--admin-socket=" + adminSocket, "--config=" + config);
    for (String finder : finders) {
      String volume = plugin == null ? "none" : volume(finder);
      for (List<String> args : List.of(List.of("plugins"), List.of("plugins", "--json"), List.of("status"),
          List.of("status", "--json"), List.of("events"), List.of("events", "--json"), List.of("volume", "list"),
          List.of("volume", "list", "--json"), List.of("plugin", "monolith", name),
          List.of("volume", "mount", "--plugin", name, "--volume", volume, "--alloc", "training"))) {
        String[] argv = new String[args.size() + 1];
        args.toArray(argv);
        argv[args.size()] = finder;
        int code = CsiAgentCommand.commandLine(nowhere, nowhere, argv).execute(argv);
        boolean nothingThere = plugin == null && (args.get(0).equals("plugin") || args.contains("mount"));
        failed += code == ExitCodes.OK || nothingThere ? 0 : 1;
      }
    }
    return failed == 0 ? ExitCodes.OK : ExitCodes.FAILURE;
  }

  /** Until the plugin is registered (a launched mock plugin: a second or two), or 30 s. */
  private void waitForThePlugin() throws Exception {
    try (AdminClient client = AdminClient.connect(adminSocket)) {
      for (int i = 0; i < 300 && client.listPlugins(PluginType.CSI_NODE).isEmpty(); i++) {
        Thread.sleep(100);
      }
    }
  }

  /** A volume of the plugin to mount (one per way of finding the agent: each is mounted once). */
  private String volume(String finder) throws AdminClient.AdminException {
    try (AdminClient client = AdminClient.connect(adminSocket)) {
      // With the access `volume create` asks for by default: without one the agent refuses the volume, and the
      // mount's answer (the success path: its classes) would never be trained.
      return client.createVolume(CreateVolumeRequest.newBuilder().setPlugin(plugin).setName("training-"
          + finder.hashCode()).setRequiredBytes(1 << 20).setAccess(VolumeAccess.newBuilder().setAccessType("mount")
          .setAccessMode("single-node-writer")).build()).getVolumeId();
    } catch (AdminClient.AdminException e) {
      return "none"; // the mount's error path is trained instead
    }
  }
}
