package dev.csisupervisor.cli;

import static dev.csisupervisor.cli.VolumeOptions.allocOption;

import dev.csisupervisor.admin.v1.UnmountVolumeRequest;
import dev.csisupervisor.admin.v1.UnmountVolumeResponse;
import dev.csisupervisor.cli.VolumeOptions.SecretsFile;
import dev.csisupervisor.cli.VolumeOptions.Target;
import dev.csisupervisor.cli.VolumeOptions.Wait;
import java.io.PrintWriter;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume unmount}: unpublish, unstage at the last use; exit 3 while pending. */
final class VolumeUnmountCommand extends ResponseCommand<UnmountVolumeResponse> {
  static final int PENDING = 3;
  private final Target target = new Target(spec);
  private final OptionSpec alloc = CommandSpecs.add(spec, allocOption());
  private final Wait wait = new Wait(spec);
  private final SecretsFile secrets = new SecretsFile(spec);
  private final OptionSpec force = CommandSpecs.add(spec, CommandSpecs.flag("--force", "For a node plugin that is"
      + " gone for good: the agent unmounts the targets and the staging itself (what the plugin cannot do) and"
      + " removes their empty directories, then does the controller side; what it cannot do stays pending and is"
      + " reported."));

  VolumeUnmountCommand(AgentConfigReader configs) {
    super(configs, "unmount", "Unmount a volume from an allocation (unpublish; unstage at the last use; controller"
        + " unpublish at the last use of the volume on this node).",
        "With --secrets-file, the controller unpublish gets the file's secrets; the agent keeps the file's"
            + " absolute path (never the values) and reads it again if that step comes later, after a"
            + " restart too: leave the file in place until the unmount is done.",
        "Exit 0 when done; 3 when it is pending (recorded: it finishes when the plugin is back).");
  }

  @Override
  UnmountVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
    UnmountVolumeRequest.Builder b = UnmountVolumeRequest.newBuilder().setPlugin(target.plugin())
        .setVolumeId(target.volume()).setAllocId(CommandSpecs.value(alloc)).setWaitSeconds(wait.seconds(spec))
        .setForce(CommandSpecs.isSet(force));
    if (secrets.file() != null) {
      b.putAllSecrets(secrets.read(spec.commandLine().getErr()))
          .setSecretsFile(secrets.file().toAbsolutePath().normalize().toString());
    }
    return client.unmountVolume(b.build());
  }

  @Override
  void print(UnmountVolumeResponse r, PrintWriter out, PrintWriter err) {
    String alloc = CommandSpecs.value(this.alloc);
    out.println(r.getDone() ? r.getMessage().isEmpty() ? "unmounted " + target.volume() + " from " + alloc
        : r.getMessage() : "unmount of " + target.volume() + " from " + alloc + " is " + r.getMessage());
  }

  @Override
  int exitCode(UnmountVolumeResponse r) {
    return r.getDone() ? ExitCodes.OK : PENDING;
  }
}
