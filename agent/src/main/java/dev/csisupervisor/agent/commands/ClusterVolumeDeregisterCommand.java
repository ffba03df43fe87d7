package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume deregister}: removes a volume record. */
@Command(name = "deregister", mixinStandardHelpOptions = true,
    description = "Removes a volume's record; refused while it is claimed or attached.")
final class ClusterVolumeDeregisterCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    boolean gone = v.deregister(plugin, volumeId);
    say(out, gone ? "deregistered " + plugin + "/" + volumeId : plugin + "/" + volumeId + " was not registered",
        Map.of("deregistered", gone, "plugin", plugin, "volume", volumeId));
    return ExitCodes.OK;
  }
}
