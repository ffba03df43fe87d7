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

/** {@code csi-agent cluster volume snapshot delete}: a snapshot-delete request, then its outcome. */
@Command(name = "delete", mixinStandardHelpOptions = true,
    description = "Deletes a recorded snapshot (by its id, or the name it was cut as) through the controller agent of "
        + "the plugin id (DeleteSnapshot), then its record; refused while a volume is being made from it or it is "
        + "still being cut. Waits for the outcome.")
final class ClusterVolumeSnapshotDeleteCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "ID_OR_NAME") String snapshotId;
  @Mixin ClusterVolumeRequests.RequestOptions request = new ClusterVolumeRequests.RequestOptions();

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume("ID_OR_NAME", snapshotId);
    if (v.snapshot(plugin, snapshotId).isEmpty()
        && v.request(ClusterVolumeRequest.Kind.SNAPSHOT, plugin, snapshotId).isPresent()) {
      // The name it was cut as: its id (a name not cut yet, or failed, is refused saying so).
      snapshotId = ClusterVolumeSnapshots.find(v, plugin, "ID_OR_NAME", snapshotId).snapshotId();
    }
    ClusterVolumeRequest asked = ClusterVolumeRequest.deleteSnapshot(plugin, snapshotId, request.secretsFile(),
        Instant.now());
    Duration wait = request.waitFor();
    PrintWriter err = spec.commandLine().getErr();
    Map<String, Object> notRecorded = Map.of("deleted", false, "recorded", false, "plugin", plugin, "snapshot",
        snapshotId);
    if (v.snapshot(plugin, snapshotId).isEmpty()) {
      say(out, "snapshot " + snapshotId + " of plugin " + plugin + " is not recorded: nothing to delete", notRecorded);
      return ExitCodes.OK;
    }
    Optional<String> none = ClusterVolumeRequests.noController(v, asked);
    if (none.isPresent()) {
      return ClusterVolumeRequests.refused(err, asked, none.get());
    }
    Optional<ClusterVolumeRequest> stored = v.requestSnapshotDelete(asked);
    if (stored.isEmpty()) {
      say(out, "snapshot " + snapshotId + " of plugin " + plugin + " is not recorded: nothing to delete", notRecorded);
      return ExitCodes.OK;
    }
    if (wait.isZero()) {
      say(out, "asked: " + stored.get().describe() + " (csi-agent cluster volume snapshot list shows its progress)",
          Map.of("asked", true, "request", request(stored.get(), v)));
      return ExitCodes.OK;
    }
    Optional<ClusterVolumeRequest> r = ClusterVolumeRequests.await(v, ClusterVolumeRequest.Kind.SNAPSHOT_DELETE,
        plugin, snapshotId, wait, x -> x.isEmpty() || x.get().state() == ClusterVolumeRequest.State.FAILED, err);
    if (r.isEmpty()) {
      if (v.snapshot(plugin, snapshotId).isPresent()) {
        err.println("csi-agent: snapshot-delete of " + plugin + "/" + snapshotId + " was withdrawn meanwhile");
        return ExitCodes.FAILURE;
      }
      say(out, "deleted snapshot " + snapshotId + " of plugin " + plugin,
          Map.of("deleted", true, "plugin", plugin, "snapshot", snapshotId));
      return ExitCodes.OK;
    }
    if (r.get().state() == ClusterVolumeRequest.State.FAILED) {
      err.println("csi-agent: " + r.get().message() + " (the snapshot stays recorded: delete again to retry, or "
          + "cluster volume cancel snapshot-delete " + plugin + " " + snapshotId + ")");
      return ExitCodes.FAILURE;
    }
    return ClusterVolumeRequests.notDone(err, r.get(), request.waitSeconds, v);
  }
}
