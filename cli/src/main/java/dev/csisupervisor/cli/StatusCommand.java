package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.CatalogPublisherStatus;
import dev.csisupervisor.admin.v1.DiscoveredSocket;
import dev.csisupervisor.admin.v1.GetAgentStatusResponse;
import dev.csisupervisor.admin.v1.TaskStatus;
import java.io.PrintWriter;

/** {@code csi-agent status}: the agent and its plugin tasks. */
final class StatusCommand extends ResponseCommand<GetAgentStatusResponse> {
  StatusCommand(AgentConfigReader configs) {
    super(configs, "status", "Show the running agent and its plugin tasks (processes, restarts, phase, CPU,"
        + " memory), the cluster catalog publisher (etcd member, lease, backlog, last error), volumes with"
        + " pending operations or an abnormal condition, and the sockets of its discovery directory.");
  }

  @Override
  GetAgentStatusResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.status();
  }

  /**
   * {@code cluster node n1 under /csi-supervisor: connected to http://10.0.0.2:2379, lease 694d7a1b2c3d4e5f (12.3s of
   * 15s left), backlog 0} and, after a failure, {@code   last etcd error: ...}.
   */
  static void cluster(CatalogPublisherStatus c, PrintWriter out) {
    String state = c.getConnected() ? "connected to " + c.getEndpoint()
        : "NOT CONNECTED (trying " + c.getEndpoint() + " of " + String.join(",", c.getEndpointsList()) + ")";
    out.println("cluster node " + c.getNodeId() + " under " + c.getPrefix() + ": " + state
        + (c.getLeaseId().isEmpty() ? ", no lease"
            : ", lease " + c.getLeaseId() + " (" + String.format(java.util.Locale.ROOT, "%.1f", c.getLeaseTtlLeftSeconds())
                + "s of " + Math.round(c.getLeaseTtlSeconds()) + "s left)")
        + ", backlog " + c.getBacklog()
        + (c.getBacklog() == 0 ? "" : String.format(java.util.Locale.ROOT, " (oldest %.1fs)", c.getOldestPendingSeconds()))
        + ", " + c.getEtcdErrors() + " etcd error(s)");
    if (!c.getLastError().isEmpty()) {
      out.println("  last etcd error: " + c.getLastError());
    }
  }

  @Override
  void print(GetAgentStatusResponse s, PrintWriter out, PrintWriter err) {
    out.println("agent pid " + s.getPid() + ", version " + s.getVersion() + ", up since "
        + Format.time(Format.instant(s.getStarted())));
    out.println("data dir " + s.getDataDir() + ", csi root " + s.getCsiRoot());
    out.println("admin socket " + s.getAdminSocket()
        + (s.getMetricsUrl().isEmpty() ? "" : ", metrics " + s.getMetricsUrl()));
    if (s.hasCluster()) {
      cluster(s.getCluster(), out);
    }
    out.println();
    out.println(Format.pad("ID", 24) + Format.pad("KIND", 12) + Format.pad("PROCESS", 12)
        + Format.pad("PID", 9) + Format.pad("RESTARTS", 10) + Format.pad("PHASE", 16)
        + Format.pad("HEALTHY", 9) + Format.pad("CPU", 9) + "MEMORY");
    for (TaskStatus t : s.getTasksList()) {
      boolean sampled = t.hasResources() && t.getResources().hasLatest();
      out.println(Format.pad(t.getId(), 24) + Format.pad(t.getKind(), 12)
          + Format.pad(t.getProcessState() + (t.getReattached() ? "*" : "")
              + (t.getDiscovered() ? "+" : ""), 12)
          + Format.pad(t.getPid() == 0 ? "-" : Long.toString(t.getPid()), 9)
          + Format.pad(Integer.toString(t.getRestarts()), 10) + Format.pad(t.getPhase(), 16)
          + Format.pad(t.getHealthy() ? "yes" : "no", 9)
          + Format.pad(sampled ? Format.cpu(t.getResources().getLatest().getCpuPercent()) : "-",
              9)
          + (sampled ? Format.bytes(t.getResources().getLatest().getMemoryBytes()) : "-"));
    }
    if (s.getTasksList().stream().anyMatch(TaskStatus::getReattached)) {
      out.println("(* re-attached after an agent restart)");
    }
    if (s.getTasksList().stream().anyMatch(TaskStatus::getDiscovered)) {
      out.println("(+ found in the discovery directory)");
    }
    for (TaskStatus t : s.getTasksList()) {
      if (!t.getArtifactError().isEmpty()) {
        out.println(t.getId() + ": artifact error: " + t.getArtifactError());
      }
      if (!t.getLastFailure().isEmpty()) {
        out.println(t.getId() + ": last failure at "
            + Format.time(Format.instant(t.getLastFailureTime())) + ": "
            + t.getLastFailure());
      }
    }
    if (s.getPendingVolumesCount() > 0) {
      out.println();
      out.println("volumes with an operation pending (finished when their plugin is ready):");
      VolumeListCommand.table(out, s.getPendingVolumesList());
    }
    s.getAbnormalVolumesMap().forEach((volume, message) -> out.println("volume " + volume + " is abnormal: " + message));
    if (!s.getDiscoveryDir().isEmpty()) {
      out.println();
      out.println("discovery dir " + s.getDiscoveryDir() + ": "
          + s.getDiscoveredSocketsCount() + " socket(s)");
      for (DiscoveredSocket d : s.getDiscoveredSocketsList()) {
        out.println("  " + Format.pad(d.getId(), 24) + Format.pad(d.getState(), 12)
            + Format.pad(d.getKind().isEmpty() ? "-" : d.getKind(), 12)
            + (d.getMessage().isEmpty() ? d.getSocketPath() : d.getMessage()));
      }
    }
  }
}
