package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
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

/** {@code csi-agent cluster volume snapshot create}: a snapshot request, then its outcome. */
@Command(name = "create", mixinStandardHelpOptions = true,
    description = "Cuts a snapshot of a registered volume through the controller agent of the plugin id "
        + "(CreateSnapshot by NAME, idempotent; sent again until the snapshot is ready); waits for it to be ready "
        + "and prints its id.")
final class ClusterVolumeSnapshotCreateCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "NAME", description = "The snapshot's name: CreateSnapshot's idempotency key.")
  String name;
  @Option(names = "--volume", required = true, paramLabel = "VOLUME_ID", description = "The volume to cut it from.")
  String volume;
  @Option(names = "--parameter", paramLabel = "KEY=VALUE", description = "A CreateSnapshot parameter (never a secret).")
  Map<String, String> parameters = new TreeMap<>();
  @Mixin ClusterVolumeRequests.RequestOptions request = new ClusterVolumeRequests.RequestOptions();

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    // Step 1: every argument, each named, before anything is asked of etcd.
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume("NAME", name);
    CsiIds.checkVolume("--volume", volume);
    ClusterVolumeRequest asked = ClusterVolumeRequest.snapshot(plugin, name, volume,
        ClusterVolumeRequests.keyValues("--parameter", parameters), request.secretsFile(), Instant.now());
    request.waitFor();
    // Step 2: capabilities first; the request (etcd checks the volume is registered and not being deleted); its outcome.
    Optional<ClusterVolumeRequest> r = askAndAwait(v, out, asked, v::ask, request, true, "");
    if (r.isEmpty()) {
      return exit;
    }
    Optional<ClusterVolumeSnapshot> snap = v.snapshot(plugin, r.get().volumeId());
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("created", true);
    json.put("name", name);
    json.put("snapshot", r.get().volumeId());
    json.put("controller", r.get().controllerNodeId());
    snap.ifPresent(x -> json.put("record", ClusterViews.snapshot(x)));
    say(out, "snapshot " + r.get().volumeId() + " of plugin " + plugin + " cut from volume " + volume + " as " + name
        + snap.map(x -> " (" + ClusterViews.size(x.sizeBytes()) + ", ready)").orElse(" (deleted since)")
        + (r.get().controllerNodeId().isEmpty() ? "" : " through controller agent " + r.get().controllerNodeId()),
        json);
    return ExitCodes.OK;
  }
}
