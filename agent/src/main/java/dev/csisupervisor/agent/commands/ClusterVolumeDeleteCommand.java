package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume delete}: a delete request, then its outcome. */
@Command(name = "delete", mixinStandardHelpOptions = true,
    description = "Deletes a registered volume through the controller agent of the plugin id (DeleteVolume), then "
        + "its record; refused while it is claimed or attached. Waits for the outcome.")
final class ClusterVolumeDeleteCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;
  @Mixin ClusterVolumeRequests.RequestOptions request = new ClusterVolumeRequests.RequestOptions();

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume("VOLUME_ID", volumeId);
    ClusterVolumeRequest asked = ClusterVolumeRequest.delete(plugin, volumeId, request.secretsFile(), Instant.now());
    Duration wait = request.waitFor();
    PrintWriter err = spec.commandLine().getErr();
    if (v.volume(plugin, volumeId).isEmpty()) {
      say(out, plugin + "/" + volumeId + " is not registered: nothing to delete",
          Map.of("deleted", false, "registered", false, "plugin", plugin, "volume", volumeId));
      return ExitCodes.OK;
    }
    Optional<String> none = ClusterVolumeRequests.noController(v, asked);
    if (none.isPresent()) {
      return ClusterVolumeRequests.refused(err, asked, none.get());
    }
    Optional<ClusterVolumeRequest> stored = v.requestDelete(asked);
    if (stored.isEmpty()) {
      say(out, plugin + "/" + volumeId + " is not registered: nothing to delete",
          Map.of("deleted", false, "registered", false, "plugin", plugin, "volume", volumeId));
      return ExitCodes.OK;
    }
    if (wait.isZero()) {
      say(out, "asked: " + stored.get().describe() + " (csi-agent cluster volume status shows its progress)",
          Map.of("asked", true, "request", request(stored.get(), v)));
      return ExitCodes.OK;
    }
    Optional<ClusterVolumeRequest> r = ClusterVolumeRequests.await(v, ClusterVolumeRequest.Kind.DELETE, plugin, volumeId,
        wait, x -> x.isEmpty() || x.get().state() == ClusterVolumeRequest.State.FAILED);
    if (r.isEmpty()) {
      if (v.volume(plugin, volumeId).isPresent()) {
        err.println("csi-agent: delete of " + plugin + "/" + volumeId + " was withdrawn meanwhile");
        return ExitCodes.FAILURE;
      }
      say(out, "deleted volume " + volumeId + " of plugin " + plugin,
          Map.of("deleted", true, "plugin", plugin, "volume", volumeId));
      return ExitCodes.OK;
    }
    if (r.get().state() == ClusterVolumeRequest.State.FAILED) {
      err.println("csi-agent: " + r.get().message() + " (the volume stays registered and refuses new claims while "
          + "the delete is asked: delete again to retry, or cluster volume cancel delete " + plugin + " " + volumeId
          + ")");
      return ExitCodes.FAILURE;
    }
    return ClusterVolumeRequests.notDone(err, r.get(), request.waitSeconds, v);
  }
}
