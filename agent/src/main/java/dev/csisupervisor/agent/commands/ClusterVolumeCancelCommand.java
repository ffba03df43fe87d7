package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume cancel}: withdraws a create or delete not done. */
@Command(name = "cancel", mixinStandardHelpOptions = true,
    description = "Withdraws a create or delete request that is not done (pending or failed). A create already "
        + "sent may still make its volume in the plugin; asked again by the same name, it is found.")
final class ClusterVolumeCancelCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "create|delete") String kind;
  @Parameters(index = "1", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "2", paramLabel = "NAME_OR_VOLUME_ID") String name;

  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    ClusterVolumeRequest.Kind k = switch (kind) {
      case "create" -> ClusterVolumeRequest.Kind.CREATE;
      case "delete" -> ClusterVolumeRequest.Kind.DELETE;
      default -> throw new IllegalArgumentException("the first argument must be create or delete, got '" + kind + "'");
    };
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume("NAME_OR_VOLUME_ID", name);
    boolean withdrew = v.withdraw(k, plugin, name);
    say(out, withdrew ? "withdrew the " + kind + " of " + plugin + "/" + name
        : "no pending or failed " + kind + " of " + plugin + "/" + name,
        Map.of("withdrew", withdrew, "kind", k.name(), "plugin", plugin, "name", name));
    return ExitCodes.OK;
  }
}
