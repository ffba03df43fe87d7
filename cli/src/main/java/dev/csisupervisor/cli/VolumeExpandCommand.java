package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.ExpandVolumeRequest;
import dev.csisupervisor.admin.v1.ExpandVolumeResponse;
import dev.csisupervisor.cli.VolumeOptions.SecretsFile;
import dev.csisupervisor.cli.VolumeOptions.Target;
import dev.csisupervisor.common.ByteSizes;
import java.io.PrintWriter;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume expand}: ControllerExpandVolume, then NodeExpandVolume where mounted. */
final class VolumeExpandCommand extends ResponseCommand<ExpandVolumeResponse> {
  private final Target target = new Target(spec);
  private final OptionSpec size = CommandSpecs.add(spec, CommandSpecs.option("--size", "SIZE", String.class,
      "At least this size.").required(true));
  private final SecretsFile secrets = new SecretsFile(spec);

  VolumeExpandCommand(AgentConfigReader configs) {
    super(configs, "expand", "Expand a volume (ControllerExpandVolume, then NodeExpandVolume where it is mounted).");
  }

  @Override
  ExpandVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.expandVolume(ExpandVolumeRequest.newBuilder().setPlugin(target.plugin())
        .setVolumeId(target.volume()).setRequiredBytes(ByteSizes.parse(CommandSpecs.value(size)))
        .putAllSecrets(secrets.read(spec.commandLine().getErr())).build());
  }

  @Override
  void print(ExpandVolumeResponse r, PrintWriter out, PrintWriter err) {
    out.println("expanded " + target.volume() + (r.getCapacityBytes() == 0 ? "" : " to " + Format.bytes(r.getCapacityBytes()))
        + (r.getNodeExpansionPending() ? "; the node's part (NodeExpandVolume) is owed: done after its next mount"
            + " here" : ""));
  }
}
