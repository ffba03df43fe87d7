package dev.csisupervisor.cli;

import static dev.csisupervisor.cli.VolumeOptions.allocOption;

import dev.csisupervisor.admin.v1.ReleaseAllocRequest;
import dev.csisupervisor.admin.v1.ReleaseAllocResponse;
import dev.csisupervisor.cli.VolumeOptions.Wait;
import java.io.PrintWriter;
import picocli.CommandLine.Model.OptionSpec;

/** {@code csi-agent volume release}: unmount every volume of one allocation; exit 3 while pending. */
final class VolumeReleaseCommand extends ResponseCommand<ReleaseAllocResponse> {
  private final OptionSpec alloc = CommandSpecs.add(spec, allocOption());
  private final Wait wait = new Wait(spec);
  private final OptionSpec force = CommandSpecs.add(spec, CommandSpecs.flag("--force", "Each unmount forced (see"
      + " volume unmount --help): for a node plugin that is gone for good."));

  VolumeReleaseCommand(AgentConfigReader configs) {
    super(configs, "release", "Unmount every volume of one allocation (as unmount, without secrets): an allocation"
        + " the task runner no longer runs.",
        "Exit 0 when done; 3 when something is pending (recorded: it finishes when the plugin is back).");
  }

  @Override
  ReleaseAllocResponse ask(AdminClient client) throws AdminClient.AdminException {
    return client.releaseAlloc(ReleaseAllocRequest.newBuilder().setAllocId(CommandSpecs.value(alloc))
        .setForce(CommandSpecs.isSet(force)).setWaitSeconds(wait.seconds(spec)).build());
  }

  @Override
  void print(ReleaseAllocResponse r, PrintWriter out, PrintWriter err) {
    String alloc = CommandSpecs.value(this.alloc);
    String volumes = String.join(", ", r.getVolumesList());
    if (r.getVolumesCount() == 0) {
      out.println("alloc " + alloc + " holds no volume on this node");
    } else if (r.getDone()) {
      out.println("released alloc " + alloc + ": unmounted " + volumes);
    } else {
      out.println("release of alloc " + alloc + " (" + volumes + ") is " + r.getMessage());
    }
  }

  @Override
  int exitCode(ReleaseAllocResponse r) {
    return r.getDone() ? ExitCodes.OK : VolumeUnmountCommand.PENDING;
  }
}
