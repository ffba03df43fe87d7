package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.PluginType;
import java.io.PrintWriter;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent plugins [--type T] [--json]}. */
final class PluginsCommand extends ResponseCommand<ListPluginsResponse> {
  private final OptionSpec type = CommandSpecs.add(spec, TypeOption.option());

  PluginsCommand(AgentConfigReader configs) {
    super(configs, "plugins", "List the registered plugins (the newest instance of each name).");
  }

  @Override
  ListPluginsResponse ask(AdminClient client) throws AdminClient.AdminException {
    return ListPluginsResponse.newBuilder().addAllPlugins(client.listPlugins(CommandSpecs.value(type))).build();
  }

  @Override
  void print(ListPluginsResponse r, PrintWriter out, PrintWriter err) {
    Format.table(out, r.getPluginsList());
  }
}
