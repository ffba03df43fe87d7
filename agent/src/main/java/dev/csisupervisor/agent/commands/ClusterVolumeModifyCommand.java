package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume modify}: a modify request, then its outcome. */
@Command(name = "modify", mixinStandardHelpOptions = true,
    description = "Changes a registered volume's mutable parameters through the controller agent of the plugin id "
        + "(ControllerModifyVolume with the keys given), then merges them into its record; one modify per volume at "
        + "a time. Waits for the outcome.")
final class ClusterVolumeModifyCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;
  @Option(names = "--mutable-parameter", paramLabel = "KEY=VALUE", required = true,
      description = "A mutable parameter to set (at least one; repeat for more).")
  Map<String, String> mutable = new TreeMap<>();
  @Mixin ClusterVolumeRequests.RequestOptions request = new ClusterVolumeRequests.RequestOptions();

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume("VOLUME_ID", volumeId);
    if (mutable.isEmpty()) {
      throw new IllegalArgumentException("--mutable-parameter: at least one KEY=VALUE is needed");
    }
    ClusterVolumeRequest asked = ClusterVolumeRequest.modify(plugin, volumeId,
        ClusterVolumeRequests.keyValues("--mutable-parameter", mutable), request.secretsFile(), Instant.now());
    request.waitFor();
    // etcd checks the volume is registered and not being deleted, and that no other modify of it is pending.
    Optional<ClusterVolumeRequest> r = askAndAwait(v, out, asked, v::ask, request, true,
        " (the volume's record is unchanged)");
    if (r.isEmpty()) {
      return exit;
    }
    Map<String, String> now = v.volume(plugin, volumeId).map(ClusterVolume::mutableParameters).orElse(Map.of());
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("modified", true);
    json.put("plugin", plugin);
    json.put("volume", volumeId);
    json.put("mutableParameters", now);
    json.put("controller", r.get().controllerNodeId());
    say(out, "modified volume " + volumeId + " of plugin " + plugin + ": mutable parameters now " + now
        + (r.get().controllerNodeId().isEmpty() ? "" : " (through controller agent " + r.get().controllerNodeId()
        + ")"), json);
    return ExitCodes.OK;
  }
}
