package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume cancel}: withdraws a request not done. */
@Command(name = "cancel", mixinStandardHelpOptions = true,
    description = "Withdraws a request that is not done (pending or failed): create, delete, snapshot, "
        + "snapshot-delete, modify or register. A create or snapshot already sent is CANCELLED instead: its controller "
        + "agent learns by name what the call made and deletes it, then removes the request.")
final class ClusterVolumeCancelCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "KIND",
      description = "create, delete, snapshot, snapshot-delete, modify or register.")
  String kind;
  @Parameters(index = "1", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "2", paramLabel = "NAME_OR_ID",
      description = "A create's or snapshot's name; else the volume id (the snapshot id for a snapshot-delete).")
  String name;

  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    ClusterVolumeRequest.Kind k = ClusterVolumeRequest.Kind.parse("KIND", kind);
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume("NAME_OR_ID", name);
    boolean withdrew = v.withdraw(k, plugin, name);
    Optional<ClusterVolumeRequest> left = withdrew ? v.request(k, plugin, name) : Optional.empty();
    boolean cancelled = left.map(r -> r.state() == ClusterVolumeRequest.State.CANCELLED).orElse(false);
    String what = k.segment() + " of " + plugin + "/" + name;
    String text = !withdrew ? "no pending or failed " + what
        : cancelled ? "cancelled the " + what + ": it was sent, so its controller agent learns by name what it made "
            + "and deletes it (csi-agent cluster volume status shows it until then)"
        : "withdrew the " + what;
    say(out, text, Map.of("withdrew", withdrew, "cancelled", cancelled, "kind", k.name(), "plugin", plugin,
        "name", name));
    return ExitCodes.OK;
  }
}
