package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.GetVolumeStatsRequest;
import dev.csisupervisor.admin.v1.GetVolumeStatsResponse;
import dev.csisupervisor.admin.v1.VolumeUsageStat;
import dev.csisupervisor.cli.VolumeOptions.Target;
import java.io.PrintWriter;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume stats}: usage and condition of a mounted volume. */
final class VolumeStatsCommand extends ResponseCommand<GetVolumeStatsResponse> {
  private final Target target = new Target(spec);
  private final OptionSpec alloc = CommandSpecs.add(spec, CommandSpecs.option("--alloc", "ALLOC_ID", String.class,
      "Where it is published for this alloc (default: its first publication).").defaultValue(""));

  VolumeStatsCommand(AgentConfigReader configs) {
    super(configs, "stats", "Usage and condition of a mounted volume (NodeGetVolumeStats).");
  }

  @Override
  GetVolumeStatsResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.volumeStats(GetVolumeStatsRequest.newBuilder().setPlugin(target.plugin())
        .setVolumeId(target.volume()).setAllocId(CommandSpecs.value(alloc)).build());
  }

  @Override
  void print(GetVolumeStatsResponse r, PrintWriter out, PrintWriter err) {
    for (VolumeUsageStat u : r.getUsageList()) {
      boolean bytes = u.getUnit().equals("BYTES");
      out.println(Format.pad(u.getUnit(), 8) + "used " + (bytes ? Format.bytes(u.getUsed()) : u.getUsed())
          + " of " + (bytes ? Format.bytes(u.getTotal()) : u.getTotal()) + ", available "
          + (bytes ? Format.bytes(u.getAvailable()) : u.getAvailable()));
    }
    out.println("condition: " + (!r.getHasCondition() ? "not reported"
        : r.getAbnormal() ? "ABNORMAL: " + r.getConditionMessage() : "normal"));
  }
}
