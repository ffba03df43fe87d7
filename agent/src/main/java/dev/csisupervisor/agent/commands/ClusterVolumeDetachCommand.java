package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume detach --force}: a lost node released by hand. */
@Command(name = "detach", mixinStandardHelpOptions = true,
    description = "With --force: deletes a node's claims (of one volume, or all) and its attachments WITHOUT any "
        + "controller unpublish or node unmount. Only for a node that is gone for good, once its disks are "
        + "detached by hand: another node may then attach and write them.")
final class ClusterVolumeDetachCommand extends ClusterVolumeSubcommand {
  @Option(names = "--node", required = true, paramLabel = "NODE") String node;
  @Option(names = "--force", description = "Required: say that you mean it.") boolean force;
  @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    if (!force) {
      throw new IllegalArgumentException("detach needs --force: it releases node " + node + "'s claims without any "
          + "unpublish or unmount (a lost node's claims go by themselves once it is back, or after detach_after)");
    }
    List<ClusterClaim> gone = v.forceDetach(node, Optional.ofNullable(plugin), Optional.ofNullable(volumeId));
    say(out, "released " + gone.size() + " claim(s) of node " + node + " without unpublish or unmount: "
        + gone.stream().map(c -> c.pluginId() + "/" + c.volumeId() + " alloc " + c.allocId()).toList(),
        Map.of("node", node, "released", gone.stream().map(c -> Map.of("plugin", c.pluginId(), "volume",
            c.volumeId(), "alloc", c.allocId(), "mode", c.mode().name())).toList()));
    return ExitCodes.OK;
  }
}
