package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.CollectOrphansResponse;
import dev.csisupervisor.admin.v1.OrphanMountInfo;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume gc}: the orphan mounts under the CSI root; with {@code --yes}, unmounted. */
final class VolumeGcCommand extends ResponseCommand<CollectOrphansResponse> {
  private final OptionSpec yes = CommandSpecs.add(spec, CommandSpecs.flag("--yes",
      "Unmount them (and remove their empty directories)."));

  VolumeGcCommand(AgentConfigReader configs) {
    super(configs, "gc", "List the orphan mounts: mount points under the CSI root's staging/ and per-alloc/"
        + " directories that no volume record names (a crash before the record was written, another agent,"
        + " a hand); with --yes, unmount them.",
        "None are found when the agent does not verify mounts (volumes.verify_mounts: false).",
        "Exit 0; 1 if one could not be unmounted.");
  }

  @Override
  CollectOrphansResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.collectOrphans(CommandSpecs.isSet(yes));
  }

  @Override
  void print(CollectOrphansResponse r, PrintWriter out, PrintWriter err) {
    if (r.getOrphansCount() == 0) {
      out.println("no orphan mounts: every mount under the CSI root's staging/ and per-alloc/ directories"
          + " belongs to a volume");
      return;
    }
    if (!CommandSpecs.isSet(yes)) {
      out.println("orphan mounts (no volume record names them):");
      r.getOrphansList().forEach(o -> out.println("  " + o.getPath()));
      out.println("would unmount " + r.getOrphansCount() + " orphan mount(s); to do it: csi-agent volume gc --yes");
      return;
    }
    for (OrphanMountInfo o : r.getOrphansList()) {
      out.println(o.getRemoved() ? "unmounted " + o.getPath()
          : "could not unmount " + o.getPath() + ": " + o.getError());
    }
  }

  @Override
  int exitCode(CollectOrphansResponse r) {
    return r.getOrphansList().stream().allMatch(o -> o.getRemoved() || o.getError().isEmpty())
        ? ExitCodes.OK : ExitCodes.FAILURE;
  }
}
