package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.PluginType;
import java.io.PrintWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code csi-agent plugins [--type T] [--json]}. */
@Command(name = "plugins", mixinStandardHelpOptions = true,
    description = "List the registered plugins (the newest instance of each name).")
final class PluginsCommand extends ResponseCommand<ListPluginsResponse> {
  @Option(names = "--type", paramLabel = "controller|node", converter = TypeOption.class,
      description = "Only this type.")
  PluginType type = PluginType.PLUGIN_TYPE_UNSPECIFIED;

  @Override
  ListPluginsResponse ask(AdminClient client) throws AdminClient.AdminException {
    return ListPluginsResponse.newBuilder().addAllPlugins(client.listPlugins(type)).build();
  }

  @Override
  void print(ListPluginsResponse r, PrintWriter out, PrintWriter err) {
    Format.table(out, r.getPluginsList());
  }
}
