package dev.csisupervisor.mockplugin;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The options of {@link MockPluginCommand} (a picocli mixin) that say how its in-memory driver behaves: a shared
 * cloud, create and snapshot times, a state file, real mounts, dependent snapshots, mutable parameters and pools.
 * {@link #configure} hands them to a {@link MockCsiPlugin.Builder}, refusing bad values with exit code 2.
 */
final class DriverFlags {

  @Option(names = "--cloud", paramLabel = "PATH",
      description = {"Share a cloud with other mock plugins through PATH (file-locked): disks made by any of them,",
          "attached by any controller to any node, a single-node disk to one node only; an oracle that counts",
          "what a correct CO never does (see 'csi-mock-plugin cloud-report --help')."})
  private Path cloud;

  @Option(names = "--cloud-attach-ms", paramLabel = "N", description = "How long each cloud attach takes (default 0).")
  private long cloudAttachMs;

  @Option(names = "--create-ms", paramLabel = "N",
      description = {"How long each CreateVolume takes (default 0); the volume exists from the call's start, and the",
          "same name asked meanwhile is ABORTED (an operation is pending for it)."})
  private long createMs;

  @Option(names = "--state-file", paramLabel = "PATH",
      description = {"Keep the driver's volumes, publications, stages and publishes in PATH: loaded on start,",
          "saved after every change (atomic rename), so a restart after SIGKILL keeps them."})
  private Path stateFile;

  @Option(names = "--real-mounts", paramLabel = "DIR",
      description = {"Mount for real (needs root), as kubernetes-csi hostpath: each volume's data is DIR/<sha256 of",
          "its id> (block: a sparse DIR/<sha256>.img); stage and publish bind-mount it, read-only if asked,",
          "unpublish and unstage unmount it; whether a path is mounted is read from /proc/self/mountinfo.",
          "With --cloud the data is beside the cloud file instead (PATH.data), where every process sees it."})
  private Path realMounts;

  @Option(names = "--snapshot-ms", paramLabel = "N",
      description = {"How long cutting a snapshot takes (default 0): CreateSnapshot answers when it is done; the",
          "same name asked meanwhile (any process on the cloud) is ABORTED."})
  private long snapshotMs;

  @Option(names = "--snapshot-ready-ms", paramLabel = "N",
      description = {"How long after its cut a snapshot becomes ready_to_use (default 0); CreateSnapshot sent again",
          "by name answers its readiness now; a CreateVolume from it before then is FAILED_PRECONDITION."})
  private long snapshotReadyMs;

  @Option(names = "--dependent-snapshots",
      description = {"ZFS-like: deleting a snapshot that volumes were restored from, or a volume that has",
          "snapshots, is FAILED_PRECONDITION naming them."})
  private boolean dependentSnapshots;

  @Option(names = "--mutable-parameters", paramLabel = "NAME[,NAME...]", split = ",",
      description = {"The mutable_parameters it accepts (CreateVolume, ControllerModifyVolume); advertises",
          "MODIFY_VOLUME. Other keys are INVALID_ARGUMENT, nothing changed."})
  private List<String> mutableParameters;

  @Option(names = "--pools", paramLabel = "SEGMENT=SIZE[,...]",
      description = {"Storage pools, each the topology segment " + Pools.KEY + "=SEGMENT of SIZE bytes",
          "(e.g. fast=10Gi,slow=1Ti): a volume goes to a pool with room that its accessibility requirements allow",
          "(else RESOURCE_EXHAUSTED); GetCapacity answers per pool; advertises GET_CAPACITY and",
          "VOLUME_ACCESSIBILITY_CONSTRAINTS."})
  private String pools;

  /**
   * Sets the builder's driver options from these flags.
   *
   * @throws ParameterException naming the option: a negative time, a malformed pool or mutable parameter
   */
  void configure(MockCsiPlugin.Builder builder, CommandLine commandLine) {
    if (stateFile != null) {
      builder.stateFile(stateFile);
    }
    builder.createTime(millis(commandLine, "--create-ms", createMs));
    if (cloud != null) {
      builder.cloud(cloud, millis(commandLine, "--cloud-attach-ms", cloudAttachMs));
    }
    if (realMounts != null) {
      builder.realMounts(realMounts);
    }
    builder.snapshotTime(millis(commandLine, "--snapshot-ms", snapshotMs))
        .snapshotReadyTime(millis(commandLine, "--snapshot-ready-ms", snapshotReadyMs));
    if (dependentSnapshots) {
      builder.dependentSnapshots();
    }
    poolsAndParameters(builder, commandLine);
  }

  private void poolsAndParameters(MockCsiPlugin.Builder builder, CommandLine commandLine) {
    try {
      if (mutableParameters != null) {
        builder.mutableParameters(mutableParameters);
      }
      if (pools != null) {
        builder.pools(pools);
      }
    } catch (IllegalArgumentException e) {
      throw new ParameterException(commandLine, (pools != null && e.getMessage().startsWith("pools")
          ? "--pools: " : "--mutable-parameters: ") + e.getMessage());
    }
  }

  private static Duration millis(CommandLine commandLine, String option, long ms) {
    return Duration.ofMillis(MockPluginCommand.nonNegative(commandLine, option, ms));
  }
}
