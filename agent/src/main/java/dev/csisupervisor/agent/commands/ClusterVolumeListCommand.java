package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;

/** {@code csi-agent cluster volume list}: every registered volume with its claims. */
@Command(name = "list", mixinStandardHelpOptions = true, description = "Every registered volume, with its claims.")
final class ClusterVolumeListCommand extends ClusterVolumeSubcommand {
  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    VolumesSnapshot s = v.read();
    if (etcd.json) {
      List<Object> all = new ArrayList<>();
      s.volumes().forEach(vol -> all.add(ClusterViews.volume(vol, s)));
      ClusterCommand.printJson(out, Map.of("revision", s.revision(), "volumes", all, "requests",
          ClusterViews.requestsJson(s, r -> r.state() != ClusterVolumeRequest.State.DONE)));
      return ExitCodes.OK;
    }
    out.printf("%-20s %-40s %-8s %s%n", "PLUGIN", "VOLUME", "CLAIMS", "ATTACHED TO");
    for (ClusterVolume vol : s.volumes()) {
      out.printf("%-20s %-40s %-8d %s%s%n", vol.pluginId(), vol.volumeId(), s.claimsOf(vol.pluginId(), vol.volumeId()).size(),
          s.attachmentsOf(vol.pluginId(), vol.volumeId()).stream().map(a -> a.nodeId() + "(" + a.state() + ")").toList(),
          vol.source().map(f -> " from " + f).orElse("")
              + (vol.mutableParameters().isEmpty() ? "" : " mutable " + vol.mutableParameters())
              + (vol.validated() ? "" : " NOT VALIDATED"));
    }
    ClusterVolumeRequests.printRequests(s, r -> true, out);
    return ExitCodes.OK;
  }
}
