package dev.csisupervisor.cli;

import static dev.csisupervisor.cli.VolumeOptions.allocOption;
import static dev.csisupervisor.cli.VolumeOptions.pairs;

import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.MountVolumeResponse;
import dev.csisupervisor.cli.VolumeOptions.Access;
import dev.csisupervisor.cli.VolumeOptions.SecretsFile;
import dev.csisupervisor.cli.VolumeOptions.Target;
import java.io.PrintWriter;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume mount}: stage once, publish per allocation; prints the target path. */
final class VolumeMountCommand extends ResponseCommand<MountVolumeResponse> {
  private final Target target = new Target(spec);
  private final OptionSpec alloc = CommandSpecs.add(spec, allocOption());
  private final Access access = new Access(spec);
  private final OptionSpec readOnly = CommandSpecs.add(spec, CommandSpecs.flag("--read-only", "Publish read-only."));
  private final OptionSpec context = CommandSpecs.add(spec, CommandSpecs.map("--context", "K=V",
      "Volume context (repeatable)."));
  private final OptionSpec publishContext = CommandSpecs.add(spec, CommandSpecs.map("--publish-context", "K=V",
      "Publish context (repeatable)."));
  private final SecretsFile secrets = new SecretsFile(spec);

  VolumeMountCommand(AgentConfigReader configs) {
    super(configs, "mount",
        "Mount a volume for an allocation (stage once, publish per alloc); prints the target path.");
  }

  /** The request the command line asks for. */
  MountVolumeRequest request() {
    MountVolumeRequest.Builder b = MountVolumeRequest.newBuilder().setPlugin(target.plugin())
        .setVolumeId(target.volume()).setAllocId(CommandSpecs.value(alloc)).setAccess(access.proto())
        .setReadOnly(CommandSpecs.isSet(readOnly)).putAllVolumeContext(pairs(CommandSpecs.value(context)))
        .putAllPublishContext(pairs(CommandSpecs.value(publishContext)))
        .putAllSecrets(secrets.read(spec.commandLine().getErr()));
    if (secrets.file() != null) {
      // The agent keeps the path to read the secrets again if the mount must be done again (after a reboot).
      b.setSecretsFile(secrets.file().toAbsolutePath().normalize().toString());
    }
    return b.build();
  }

  @Override
  MountVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.mountVolume(request());
  }

  @Override
  void print(MountVolumeResponse r, PrintWriter out, PrintWriter err) {
    out.println(r.getTargetPath());
  }
}
