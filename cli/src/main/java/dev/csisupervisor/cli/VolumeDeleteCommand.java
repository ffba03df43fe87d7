package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.DeleteVolumeRequest;
import dev.csisupervisor.admin.v1.DeleteVolumeResponse;
import dev.csisupervisor.cli.VolumeOptions.SecretsFile;
import dev.csisupervisor.cli.VolumeOptions.Target;
import java.io.PrintWriter;

/** {@code csi-agent volume delete}: DeleteVolume through the plugin's controller. */
final class VolumeDeleteCommand extends ResponseCommand<DeleteVolumeResponse> {
  private final Target target = new Target(spec);
  private final SecretsFile secrets = new SecretsFile(spec);

  VolumeDeleteCommand(AgentConfigReader configs) {
    super(configs, "delete",
        "Delete a volume through the plugin's controller (DeleteVolume); refused while mounted here.");
  }

  @Override
  DeleteVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.deleteVolume(DeleteVolumeRequest.newBuilder().setPlugin(target.plugin())
        .setVolumeId(target.volume()).putAllSecrets(secrets.read(spec.commandLine().getErr())).build());
  }

  @Override
  void print(DeleteVolumeResponse r, PrintWriter out, PrintWriter err) {
    out.println("deleted volume " + target.volume());
  }
}
