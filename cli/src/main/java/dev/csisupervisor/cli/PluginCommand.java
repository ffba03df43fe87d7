package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.GetPluginResponse;
import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.PluginType;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Model.PositionalParamSpec;

/** {@code csi-agent plugin TYPE NAME}. */
final class PluginCommand extends AdminCommand {
  private final PositionalParamSpec kinds = PositionalParamSpec.builder().index("0").arity("1").required(true).paramLabel("TYPE")
      .type(TypeOption.Kinds.class).converters(new TypeOption.Kind())
      .description("controller, node or monolith (as in the config; a monolith shows both of"
          + " its registrations)").build();
  private final PositionalParamSpec nameParameter = PositionalParamSpec.builder().index("1").arity("1").required(true).paramLabel("NAME")
      .type(String.class).description("The plugin's name (its id).").build();

  PluginCommand(AgentConfigReader configs) {
    super(configs, "plugin", "Show one plugin with all its details, including its fingerprint, and the"
        + " agent's task for it: process, artifact revision, CPU and memory.");
    spec.addPositional(kinds);
    spec.addPositional(nameParameter);
  }

  @Override
  int run(AdminClient client, PrintWriter out, PrintWriter err)
      throws AdminClient.AdminException {
    String name = nameParameter.getValue();
    List<GetPluginResponse> found = new ArrayList<>();
    List<PluginType> types = kinds.<TypeOption.Kinds>getValue().types();
    for (PluginType type : types) {
      client.getPluginDetails(type, name).ifPresent(found::add);
    }
    if (found.isEmpty()) {
      err.println("csi-agent: no "
          + (types.size() > 1 ? "monolith" : Format.type(types.get(0)))
          + " plugin named \"" + name + "\" is registered at " + client.socket());
      return ExitCodes.FAILURE;
    }
    if (json()) {
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
