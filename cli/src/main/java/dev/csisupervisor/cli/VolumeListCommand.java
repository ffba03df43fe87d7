package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.ListVolumesResponse;
import dev.csisupervisor.admin.v1.VolumeAlloc;
import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.admin.v1.VolumeUsageInfo;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** {@code csi-agent volume list}: the volumes this node has staged or published, as a table. */
final class VolumeListCommand extends ResponseCommand<ListVolumesResponse> {
  VolumeListCommand(AgentConfigReader configs) {
    super(configs, "list", "List the volumes this node has staged or published, with their allocations and phases.");
  }

  @Override
  ListVolumesResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.listVolumes();
  }

  @Override
  void print(ListVolumesResponse r, PrintWriter out, PrintWriter err) {
    table(out, r.getVolumesList());
  }

  /**
   * One row per allocation of a usage (a usage without allocation: one row, alloc "-"); then a line per abnormal
   * volume, per pending volume what it waits for, and per volume owed a node expansion.
   */
  static void table(PrintWriter out, List<VolumeInfo> volumes) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"PLUGIN", "VOLUME", "USAGE", "STAGE", "ALLOC", "PHASE", "TARGET"});
    for (VolumeInfo v : volumes) {
      String volume = v.getVolumeId() + (v.getAbnormal().isEmpty() ? "" : " (ABNORMAL)");
      if (v.getUsagesCount() == 0) {
        boolean onlyOwed = v.getNodeExpansionPending() && v.getController().equals("NONE");
        rows.add(new String[] {v.getPlugin(), volume, "-", "-", "-",
            onlyOwed ? "expansion owed" : "controller " + v.getController(), "-"});
      }
      for (VolumeUsageInfo u : v.getUsagesList()) {
        if (u.getAllocsCount() == 0) {
          rows.add(new String[] {v.getPlugin(), volume, u.getUsage(), u.getStage(), "-", "-", "-"});
        }
        for (VolumeAlloc a : u.getAllocsList()) {
          rows.add(new String[] {v.getPlugin(), volume, u.getUsage(), u.getStage(), a.getAllocId(), a.getPhase(),
              a.getTargetPath()});
        }
      }
    }
    Format.rows(out, rows);
    if (volumes.isEmpty()) {
      out.println("(no volumes on this node)");
    }
    for (VolumeInfo v : volumes) {
      if (!v.getAbnormal().isEmpty()) {
        out.println(v.getPlugin() + "/" + v.getVolumeId() + " is abnormal: " + v.getAbnormal());
      }
    }
    for (VolumeInfo v : volumes) {
      if (v.getPending()) {
        out.println(v.getPlugin() + "/" + v.getVolumeId() + " is pending" + (v.getForced() ? " (forced)" : "") + ": "
            + (v.getWaitingFor().isEmpty() ? "in progress" : v.getWaitingFor()));
      }
    }
    for (VolumeInfo v : volumes) {
      if (v.getNodeExpansionPending()) {
        out.println(v.getPlugin() + "/" + v.getVolumeId() + " is owed a node expansion"
            + (v.getNodeExpansionRequiredBytes() == 0 ? "" : " to " + Format.bytes(v.getNodeExpansionRequiredBytes()))
            + ": NodeExpandVolume after its next mount here");
      }
    }
  }
}
