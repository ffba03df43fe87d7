package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.agent.views.ClusterVolumeHealth;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.util.Map;
import java.util.TreeMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume status}: claims, attachments, requests, stuck items. */
@Command(name = "status", mixinStandardHelpOptions = true,
    description = "Claims, attachments and stuck items of every volume (or one), and the controller agent per plugin.")
final class ClusterVolumeStatusCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    VolumesSnapshot s = v.read();
    ClusterVolumeHealth health = ClusterVolumeHealth.read(v, s, plugin);
    if (etcd.json) {
      Map<String, Object> status = ClusterViews.volumeStatus(s, plugin, volumeId);
      health.addTo(status, volumeId);
      ClusterCommand.printJson(out, status);
      return ExitCodes.OK;
    }
    out.println("controller agents: " + (s.controllers().isEmpty() ? "none elected" : new TreeMap<>(s.controllers())));
    for (ClusterVolume vol : s.volumes()) {
      if (!selected(vol)) {
        continue;
      }
      out.println(vol.pluginId() + "/" + vol.volumeId() + (vol.accessModes().isEmpty() ? "" : " " + vol.accessModes())
          + (vol.accessibleTopology().isEmpty() ? "" : " at " + vol.accessibleTopology())
          + s.createOf(vol.pluginId(), vol.volumeId()).map(r -> " (created as " + r.name() + ")").orElse("")
          + vol.source().map(f -> " from " + f).orElse("")
          + (vol.mutableParameters().isEmpty() ? "" : " mutable " + vol.mutableParameters())
          + (vol.validated() ? "" : " NOT VALIDATED")
          + s.deleteOf(vol.pluginId(), vol.volumeId()).map(r -> " BEING DELETED").orElse("")
          + health.condition(vol.pluginId(), vol.volumeId()).map(c -> " " + c.describe()).orElse(""));
      for (ClusterClaim c : s.claimsOf(vol.pluginId(), vol.volumeId())) {
        out.println("  claim " + c.holder() + " " + c.mode() + (c.readOnly() ? " read-only" : "") + " since " + c.since()
            + ClusterViews.nodeState(s, c.nodeId()));
      }
      for (ClusterAttachment a : s.attachmentsOf(vol.pluginId(), vol.volumeId())) {
        out.println("  attachment node " + a.nodeId() + " " + a.state() + " by " + a.controllerNodeId() + " since "
            + a.since() + (a.message().isEmpty() ? "" : ": " + a.message()));
      }
    }
    ClusterVolumeRequests.printRequests(s,
        r -> selected(r.pluginId(), ClusterViews.volumeOf(r, s)), out);
    ClusterViews.stuck(s, plugin, volumeId).forEach(line -> out.println("STUCK: " + line));
    if (volumeId == null) {
      health.printLeaks(out);
    }
    return ExitCodes.OK;
  }

  private boolean selected(ClusterVolume vol) {
    return selected(vol.pluginId(), vol.volumeId());
  }

  private boolean selected(String p, String v) {
    return ClusterViews.selected(plugin, volumeId, p, v);
  }
}
