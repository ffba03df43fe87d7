package dev.csisupervisor.agent.commands;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code csi-agent cluster volume create|delete|cancel|snapshot|modify|register|deregister|list|status|detach}:
 * cluster volumes in etcd, from any machine. A create, delete, snapshot, modify or validated register is a request
 * written to etcd (desired state); the controller agent of the plugin id (elected among the agents running a healthy controller of it) makes the CSI call and writes the
 * outcome, which the command waits for. An existing disk is registered by id.
 *
 * <p>One class per subcommand ({@code ClusterVolume*Command}), each a {@link ClusterVolumeSubcommand} (one etcd
 * session, errors as one line); what create and delete share is in {@link ClusterVolumeRequests}.
 */
@Command(name = "volume", mixinStandardHelpOptions = true,
    description = "Cluster volumes in etcd: created, deleted or registered volumes, their claims and attachments.",
    subcommands = {ClusterVolumeCreateCommand.class, ClusterVolumeDeleteCommand.class,
        ClusterVolumeCancelCommand.class, ClusterVolumeSnapshotCommand.class, ClusterVolumeModifyCommand.class,
        ClusterVolumeRegisterCommand.class, ClusterVolumeDeregisterCommand.class,
        ClusterVolumeListCommand.class, ClusterVolumeStatusCommand.class, ClusterVolumeDetachCommand.class,
        ClusterVolumeCapacityCommand.class})
final class ClusterVolumeCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(),
        "Missing command: create, delete, cancel, snapshot, modify, register, deregister, list, status, detach or "
            + "capacity");
  }
}
