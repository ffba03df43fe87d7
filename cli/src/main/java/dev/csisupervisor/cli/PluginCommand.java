package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.PluginType;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code csi-agent plugin TYPE NAME}. */
@Command(name = "plugin", mixinStandardHelpOptions = true,
    description = {"Show one plugin with all its details, including its fingerprint, and the"
        + " agent's task for it: process, artifact revision, CPU and memory."})
final class PluginCommand extends AdminCommand {
  @Parameters(index = "0", paramLabel = "TYPE", converter = TypeOption.Kind.class,
      description = "controller, node or monolith (as in the config; a monolith shows both of"
          + " its registrations)")
  TypeOption.Kinds kinds;

  @Parameters(index = "1", paramLabel = "NAME", description = "The plugin's name (its id).")
  String name;

  @Override
  int run(AdminClient client, PrintWriter out, PrintWriter err)
      throws AdminClient.AdminException {
    List<GetPluginResponse> found = new ArrayList<>();
    List<PluginType> types = kinds.types();
    for (PluginType type : types) {
      client.getPluginDetails(type, name).ifPresent(found::add);
    }
    if (found.isEmpty()) {
      err.println("csi-agent: no "
          + (types.size() > 1 ? "monolith" : Format.type(types.get(0)))
          + " plugin named \"" + name + "\" is registered at " + client.socket());
      return ExitCodes.FAILURE;
    }
    if (json) {
      out.println(found.size() == 1 ? Format.json(found.get(0), true)
          : Format.json(ListPluginsResponse.newBuilder()
              .addAllPlugins(found.stream().map(GetPluginResponse::getPlugin).toList()), true));
    } else {
      for (GetPluginResponse p : found) {
        Format.details(out, p.getPlugin());
        out.println();
      }
      if (found.get(0).hasTask()) {
        Format.task(out, found.get(0).getTask());
      }
    }
    return ExitCodes.OK;
  }
}
