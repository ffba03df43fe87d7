package dev.csisupervisor.agent.cli;

import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.agent.admin.AdminClient;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code csi-agent plugins [--type T] [--json]}. */
@Command(name = "plugins", mixinStandardHelpOptions = true,
    description = "List the registered plugins (the newest instance of each name).")
final class PluginsCommand extends AdminCommand {
  @Option(names = "--type", paramLabel = "controller|node", converter = TypeOption.class,
      description = "Only this type.")
  PluginType type = PluginType.PLUGIN_TYPE_UNSPECIFIED;

  @Override
  int run(AdminClient client, PrintWriter out, PrintWriter err)
      throws AdminClient.AdminException {
    List<Plugin> plugins = client.listPlugins(type);
    if (json) {
      out.println(Format.json(ListPluginsResponse.newBuilder().addAllPlugins(plugins), true));
    } else {
      Format.table(out, plugins);
    }
    return CsiAgentCommand.OK;
  }
}
