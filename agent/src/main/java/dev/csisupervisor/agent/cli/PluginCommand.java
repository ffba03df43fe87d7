package dev.csisupervisor.agent.cli;

import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.agent.admin.AdminClient;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code csi-agent plugin TYPE NAME}. */
@Command(name = "plugin", mixinStandardHelpOptions = true,
    description = {"Show one plugin with all its details, including its fingerprint, and the"
        + " agent's task for it: process, artifact revision, CPU and memory."})
final class PluginCommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Mixin
  AdminOptions admin = new AdminOptions();

  @Parameters(index = "0", paramLabel = "TYPE", converter = TypeOption.class,
      description = "controller or node")
  PluginType type;

  @Parameters(index = "1", paramLabel = "NAME", description = "The plugin's name (its id).")
  String name;

  @Option(names = "--json", description = "JSON instead of text.")
  boolean json;

  @Override
  public Integer call() {
    var out = spec.commandLine().getOut();
    try (AdminClient client = AdminClient.connect(admin.socket(spec.commandLine()))) {
      Optional<GetPluginResponse> p = client.getPluginDetails(type, name);
      if (p.isEmpty()) {
        spec.commandLine().getErr().println("csi-agent: no " + Format.type(type)
            + " plugin named \"" + name + "\" is registered at " + client.socket());
        return CsiAgentCommand.FAILURE;
      }
      if (json) {
        out.println(Format.json(p.get(), true));
      } else {
        Format.details(out, p.get().getPlugin());
        if (p.get().hasTask()) {
          Format.task(out, p.get().getTask());
        }
      }
      return CsiAgentCommand.OK;
    } catch (AdminClient.AdminException e) {
      spec.commandLine().getErr().println("csi-agent: " + e.getMessage());
      return CsiAgentCommand.FAILURE;
    }
  }
}
