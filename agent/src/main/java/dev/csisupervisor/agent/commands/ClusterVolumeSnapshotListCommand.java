package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume snapshot list}: the recorded snapshots, and the snapshot requests not done. */
@Command(name = "list", mixinStandardHelpOptions = true,
    description = "The recorded snapshots (of one plugin id, of one volume), and the snapshot requests not done with "
        + "where they are (cut, not ready; in flight; failed).")
final class ClusterVolumeSnapshotListCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
  @Option(names = "--volume", paramLabel = "VOLUME_ID", description = "Only the snapshots cut from this volume.")
  String volume;

  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    if (plugin != null) {
      CsiIds.checkPlugin("PLUGIN", plugin);
    }
    if (volume != null) {
      CsiIds.checkVolume("--volume", volume);
    }
    VolumesSnapshot s = v.read();
    List<ClusterVolumeSnapshot> snaps = s.snapshots().stream()
        .filter(x -> ClusterViews.selected(plugin, volume, x.pluginId(), x.sourceVolumeId())).toList();
    Predicate<ClusterVolumeRequest> requests = r -> r.state() != ClusterVolumeRequest.State.DONE
        && (r.kind() == ClusterVolumeRequest.Kind.SNAPSHOT || r.kind() == ClusterVolumeRequest.Kind.SNAPSHOT_DELETE)
        && ClusterViews.selected(plugin, volume, r.pluginId(), ClusterViews.volumeOf(r, s));
    if (etcd.json) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("revision", s.revision());
      m.put("snapshots", snaps.stream().map(ClusterViews::snapshot).toList());
      m.put("requests", ClusterViews.requestsJson(s, requests));
      ClusterCommand.printJson(out, m);
      return ExitCodes.OK;
    }
    out.printf("%-20s %-30s %-20s %-20s %-10s %-24s %s%n", "PLUGIN", "SNAPSHOT", "NAME", "SOURCE", "SIZE", "CREATED",
        "READY");
    for (ClusterVolumeSnapshot x : snaps) {
      out.printf("%-20s %-30s %-20s %-20s %-10s %-24s %s%n", x.pluginId(), x.snapshotId(), x.name(),
          x.sourceVolumeId(), ClusterViews.size(x.sizeBytes()), x.creationTime().map(Object::toString).orElse("-"),
          x.readyToUse() ? "yes" : "no");
    }
    ClusterVolumeRequests.printRequests(s, requests, out);
    return ExitCodes.OK;
  }
}
