package dev.csisupervisor.agent.commands;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code csi-agent cluster volume snapshot create|delete|list}: snapshots of cluster volumes. A create or delete is a
 * request in etcd ({@code requests/<plugin>/snapshot/<name>}, {@code .../snapshot-delete/<id>}) that the plugin id's
 * controller agent acts on; the snapshots it cut are under {@code snapshots/<plugin>/<id>}.
 */
@Command(name = "snapshot", mixinStandardHelpOptions = true,
    description = "Snapshots of cluster volumes: cut (CreateSnapshot), deleted (DeleteSnapshot) and listed.",
    subcommands = {ClusterVolumeSnapshotCreateCommand.class, ClusterVolumeSnapshotDeleteCommand.class,
        ClusterVolumeSnapshotListCommand.class})
final class ClusterVolumeSnapshotCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing command: create, delete or list");
  }
}
