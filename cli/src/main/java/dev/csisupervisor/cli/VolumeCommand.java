package dev.csisupervisor.cli;

import dev.csisupervisor.admin.v1.CollectOrphansResponse;
import dev.csisupervisor.admin.v1.CreateVolumeRequest;
import dev.csisupervisor.admin.v1.CreateVolumeResponse;
import dev.csisupervisor.admin.v1.DeleteVolumeRequest;
import dev.csisupervisor.admin.v1.DeleteVolumeResponse;
import dev.csisupervisor.admin.v1.ExpandVolumeRequest;
import dev.csisupervisor.admin.v1.ExpandVolumeResponse;
import dev.csisupervisor.admin.v1.GetVolumeStatsRequest;
import dev.csisupervisor.admin.v1.GetVolumeStatsResponse;
import dev.csisupervisor.admin.v1.ListVolumesResponse;
import dev.csisupervisor.admin.v1.MountVolumeRequest;
import dev.csisupervisor.admin.v1.MountVolumeResponse;
import dev.csisupervisor.admin.v1.OrphanMountInfo;
import dev.csisupervisor.admin.v1.ReleaseAllocRequest;
import dev.csisupervisor.admin.v1.ReleaseAllocResponse;
import dev.csisupervisor.admin.v1.UnmountVolumeRequest;
import dev.csisupervisor.admin.v1.Topology;
import dev.csisupervisor.admin.v1.UnmountVolumeResponse;
import dev.csisupervisor.admin.v1.VolumeAccess;
import dev.csisupervisor.admin.v1.VolumeAlloc;
import dev.csisupervisor.admin.v1.VolumeInfo;
import dev.csisupervisor.admin.v1.VolumeUsageInfo;
import dev.csisupervisor.admin.v1.VolumeUsageStat;
import dev.csisupervisor.common.ByteSizes;
import dev.csisupervisor.common.SecretsFiles;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code csi-agent volume create|delete|mount|unmount|release|list|stats|expand|gc}: the agent's node volumes.
 * Secrets are read from a file ({@code --secrets-file}: one {@code key=value} per line, {@code #}
 * comments), never taken from the command line, where {@code ps} and shell histories would show them.
 */
@Command(name = "volume", mixinStandardHelpOptions = true,
    description = "Create, mount, unmount, list, inspect, expand and delete node volumes through the agent;"
        + " release an allocation's volumes; find and unmount orphan mounts.",
    subcommands = {VolumeCommand.Create.class, VolumeCommand.Delete.class, VolumeCommand.Mount.class,
        VolumeCommand.Unmount.class, VolumeCommand.Release.class, VolumeCommand.ListVolumes.class,
        VolumeCommand.Stats.class, VolumeCommand.Expand.class, VolumeCommand.Gc.class})
final class VolumeCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing volume command");
  }

  /** The options every volume command that names a volume has. */
  static final class Target {
    @Option(names = "--plugin", required = true, paramLabel = "ID", description = "The plugin's id.")
    String plugin;

    @Option(names = "--volume", required = true, paramLabel = "VOLUME_ID", description = "The volume's id.")
    String volume;
  }

  /** How the volume is accessed. */
  static final class Access {
    @Option(names = "--access-mode", paramLabel = "MODE", defaultValue = "single-node-writer",
        description = "CSI access mode: single-node-writer (default), single-node-reader-only, "
            + "multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer, "
            + "single-node-single-writer, single-node-multi-writer.")
    String accessMode;

    @Option(names = "--block", description = "A raw block device instead of a file system mount.")
    boolean block;

    @Option(names = "--fs-type", paramLabel = "TYPE", defaultValue = "", description = "File system type (mount).")
    String fsType;

    @Option(names = "--mount-flag", paramLabel = "FLAG", description = "A mount flag (repeatable).")
    List<String> mountFlags = new ArrayList<>();

    @Option(names = "--mount-group", paramLabel = "GID", defaultValue = "",
        description = "The group that should own the mounted volume (VOLUME_MOUNT_GROUP).")
    String mountGroup;

    VolumeAccess proto() {
      return VolumeAccess.newBuilder().setAccessType(block ? "block" : "mount").setFsType(fsType)
          .addAllMountFlags(mountFlags).setAccessMode(accessMode).setVolumeMountGroup(mountGroup).build();
    }
  }

  /** {@code --secrets-file}. */
  static final class SecretsFile {
    @Option(names = "--secrets-file", paramLabel = "FILE",
        description = "Secrets for the plugin: one key=value per line (# comments). Never on the command line.")
    Path file;

    Map<String, String> read(PrintWriter err) {
      return file == null ? Map.of() : readSecrets(file, err);
    }
  }

  /**
   * A secrets file: {@code key=value} per line, blank lines and {@code #} comments ignored; the
   * value is everything after the first {@code =}. Warns (never shows a value) if others may read it.
   *
   * @throws CommandLine.ParameterException naming the file and line
   */
  static Map<String, String> readSecrets(Path file, PrintWriter err) {
    try {
      Set<PosixFilePermission> mode = Files.getPosixFilePermissions(file);
      if (mode.contains(PosixFilePermission.OTHERS_READ) || mode.contains(PosixFilePermission.GROUP_READ)) {
        err.println("csi-agent: warning: secrets file " + file + " is readable by others; chmod 600 it");
      }
    } catch (IOException | UnsupportedOperationException e) {
      // not readable (said below) or not a POSIX file system: nothing to warn about
    }
    try {
      return SecretsFiles.read(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("--secrets-file " + file + ": cannot read it: " + e.getCause().getMessage());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--secrets-file: " + e.getMessage());
    }
  }

  /** {@code k=v} options into a map. */
  static Map<String, String> pairs(Map<String, String> given) {
    return given == null ? Map.of() : given;
  }

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = "Create a volume through the plugin's controller (CreateVolume).")
  static final class Create extends ResponseCommand<CreateVolumeResponse> {
    @Option(names = "--plugin", required = true, paramLabel = "ID") String plugin;
    @Option(names = "--name", required = true, paramLabel = "NAME", description = "The volume's name (idempotency key).")
    String name;
    @Option(names = "--size", paramLabel = "SIZE", description = "At least this size: bytes, or 512MiB, 10GiB.")
    String size;
    @CommandLine.Mixin Access access = new Access();
    @Option(names = "--parameter", paramLabel = "K=V", description = "A plugin parameter (repeatable).")
    Map<String, String> parameters;
    @Option(names = "--topology", paramLabel = "KEY=VALUE",
        description = "A topology segment the volume must be accessible from (repeatable; together one segment set,"
            + " e.g. topology.ebs.csi.aws.com/zone=eu-west-1a). Default: this node's, if the plugin is topology-aware.")
    Map<String, String> topology;
    @CommandLine.Mixin SecretsFile secrets = new SecretsFile();

    @Override
    CreateVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
      CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder().setPlugin(plugin).setName(name)
          .setAccess(access.proto()).putAllParameters(pairs(parameters)).putAllTopology(pairs(topology))
          .putAllSecrets(secrets.read(spec.commandLine().getErr()));
      if (size != null) {
        b.setRequiredBytes(ByteSizes.parse(size));
      }
      return client.createVolume(b.build());
    }

    @Override
    void print(CreateVolumeResponse r, PrintWriter out, PrintWriter err) {
      out.println("created volume " + r.getVolumeId() + " (" + (r.getCapacityBytes() == 0 ? "size unknown"
          : Format.bytes(r.getCapacityBytes())) + ")" + (r.getVolumeContextCount() == 0 ? ""
          : ", context " + r.getVolumeContextMap()) + (r.getAccessibleTopologyCount() == 0 ? ""
          : ", accessible from " + topologies(r.getAccessibleTopologyList())));
    }

    /** {@code k=v,k2=v2} per topology, {@code " or "} between them. */
    private static String topologies(List<Topology> list) {
      List<String> each = new ArrayList<>();
      for (Topology t : list) {
        List<String> segments = new ArrayList<>();
        new java.util.TreeMap<>(t.getSegmentsMap()).forEach((k, v) -> segments.add(k + "=" + v));
        each.add(String.join(",", segments));
      }
      return String.join(" or ", each);
    }
  }

  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Delete a volume through the plugin's controller (DeleteVolume); refused while mounted here.")
  static final class Delete extends ResponseCommand<DeleteVolumeResponse> {
    @CommandLine.Mixin Target target = new Target();
    @CommandLine.Mixin SecretsFile secrets = new SecretsFile();

    @Override
    DeleteVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.deleteVolume(DeleteVolumeRequest.newBuilder().setPlugin(target.plugin)
          .setVolumeId(target.volume).putAllSecrets(secrets.read(spec.commandLine().getErr())).build());
    }

    @Override
    void print(DeleteVolumeResponse r, PrintWriter out, PrintWriter err) {
      out.println("deleted volume " + target.volume);
    }
  }

  @Command(name = "mount", mixinStandardHelpOptions = true,
      description = "Mount a volume for an allocation (stage once, publish per alloc); prints the target path.")
  static final class Mount extends ResponseCommand<MountVolumeResponse> {
    @CommandLine.Mixin Target target = new Target();
    @Option(names = "--alloc", required = true, paramLabel = "ALLOC_ID") String alloc;
    @CommandLine.Mixin Access access = new Access();
    @Option(names = "--read-only", description = "Publish read-only.") boolean readOnly;
    @Option(names = "--context", paramLabel = "K=V", description = "Volume context (repeatable).")
    Map<String, String> context;
    @Option(names = "--publish-context", paramLabel = "K=V", description = "Publish context (repeatable).")
    Map<String, String> publishContext;
    @CommandLine.Mixin SecretsFile secrets = new SecretsFile();

    @Override
    MountVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
      MountVolumeRequest.Builder b = MountVolumeRequest.newBuilder().setPlugin(target.plugin)
          .setVolumeId(target.volume).setAllocId(alloc).setAccess(access.proto()).setReadOnly(readOnly)
          .putAllVolumeContext(pairs(context)).putAllPublishContext(pairs(publishContext))
          .putAllSecrets(secrets.read(spec.commandLine().getErr()));
      if (secrets.file != null) {
        // The agent keeps the path to read the secrets again if the mount must be done again (after a reboot).
        b.setSecretsFile(secrets.file.toAbsolutePath().normalize().toString());
      }
      return client.mountVolume(b.build());
    }

    @Override
    void print(MountVolumeResponse r, PrintWriter out, PrintWriter err) {
      out.println(r.getTargetPath());
    }
  }

  @Command(name = "unmount", mixinStandardHelpOptions = true,
      description = {"Unmount a volume from an allocation (unpublish; unstage at the last use; controller unpublish"
          + " at the last use of the volume on this node).",
          "With --secrets-file, the controller unpublish gets the file's secrets; the agent keeps the file's"
              + " absolute path (never the values) and reads it again if that step comes later, after a"
              + " restart too: leave the file in place until the unmount is done.",
          "Exit 0 when done; 3 when it is pending (recorded: it finishes when the plugin is back)."})
  static final class Unmount extends ResponseCommand<UnmountVolumeResponse> {
    static final int PENDING = 3;
    @CommandLine.Mixin Target target = new Target();
    @Option(names = "--alloc", required = true, paramLabel = "ALLOC_ID") String alloc;
    @CommandLine.Mixin Wait wait = new Wait();
    @CommandLine.Mixin SecretsFile secrets = new SecretsFile();
    @Option(names = "--force", description = "For a node plugin that is gone for good: the agent unmounts the"
        + " targets and the staging itself (what the plugin cannot do) and removes their empty directories, then"
        + " does the controller side; what it cannot do stays pending and is reported.")
    boolean force;

    @Override
    UnmountVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
      UnmountVolumeRequest.Builder b = UnmountVolumeRequest.newBuilder().setPlugin(target.plugin)
          .setVolumeId(target.volume).setAllocId(alloc).setWaitSeconds(wait.seconds(spec)).setForce(force);
      if (secrets.file != null) {
        b.putAllSecrets(secrets.read(spec.commandLine().getErr()))
            .setSecretsFile(secrets.file.toAbsolutePath().normalize().toString());
      }
      return client.unmountVolume(b.build());
    }

    @Override
    void print(UnmountVolumeResponse r, PrintWriter out, PrintWriter err) {
      out.println(r.getDone() ? "unmounted " + target.volume + " from " + alloc
          : "unmount of " + target.volume + " from " + alloc + " is " + r.getMessage());
    }

    @Override
    int exitCode(UnmountVolumeResponse r) {
      return r.getDone() ? ExitCodes.OK : PENDING;
    }
  }

  /** {@code --wait}: how long an unmount or a release waits before it answers "pending". */
  static final class Wait {
    @Option(names = "--wait", paramLabel = "SECONDS", defaultValue = "30",
        description = "How long to wait for it to finish (default ${DEFAULT-VALUE}).")
    int seconds;

    /** The wait, checked. */
    int seconds(CommandLine.Model.CommandSpec spec) {
      if (seconds < 1) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--wait must be >= 1, got " + seconds);
      }
      return seconds;
    }
  }

  @Command(name = "release", mixinStandardHelpOptions = true,
      description = {"Unmount every volume of one allocation (as unmount, without secrets): an allocation the"
          + " task runner no longer runs.",
          "Exit 0 when done; 3 when something is pending (recorded: it finishes when the plugin is back)."})
  static final class Release extends ResponseCommand<ReleaseAllocResponse> {
    @Option(names = "--alloc", required = true, paramLabel = "ALLOC_ID") String alloc;
    @CommandLine.Mixin Wait wait = new Wait();
    @Option(names = "--force", description = "Each unmount forced (see volume unmount --help): for a node plugin"
        + " that is gone for good.")
    boolean force;

    @Override
    ReleaseAllocResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.releaseAlloc(ReleaseAllocRequest.newBuilder().setAllocId(alloc).setForce(force)
          .setWaitSeconds(wait.seconds(spec)).build());
    }

    @Override
    void print(ReleaseAllocResponse r, PrintWriter out, PrintWriter err) {
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
      return r.getDone() ? ExitCodes.OK : Unmount.PENDING;
    }
  }

  @Command(name = "gc", mixinStandardHelpOptions = true,
      description = {"List the orphan mounts: mount points under the CSI root's staging/ and per-alloc/"
          + " directories that no volume record names (a crash before the record was written, another agent,"
          + " a hand); with --yes, unmount them.",
          "None are found when the agent does not verify mounts (volumes.verify_mounts: false).",
          "Exit 0; 1 if one could not be unmounted."})
  static final class Gc extends ResponseCommand<CollectOrphansResponse> {
    @Option(names = "--yes", description = "Unmount them (and remove their empty directories).")
    boolean yes;

    @Override
    CollectOrphansResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.collectOrphans(yes);
    }

    @Override
    void print(CollectOrphansResponse r, PrintWriter out, PrintWriter err) {
      if (r.getOrphansCount() == 0) {
        out.println("no orphan mounts: every mount under the CSI root's staging/ and per-alloc/ directories"
            + " belongs to a volume");
        return;
      }
      if (!yes) {
        out.println("orphan mounts (no volume record names them):");
        r.getOrphansList().forEach(o -> out.println("  " + o.getPath()));
        out.println("would unmount " + r.getOrphansCount() + " orphan mount(s); to do it: csi-agent volume gc --yes");
        return;
      }
      for (OrphanMountInfo o : r.getOrphansList()) {
        out.println(o.getRemoved() ? "unmounted " + o.getPath()
            : "could not unmount " + o.getPath() + ": " + o.getError());
      }
    }

    @Override
    int exitCode(CollectOrphansResponse r) {
      return r.getOrphansList().stream().allMatch(o -> o.getRemoved() || o.getError().isEmpty())
          ? ExitCodes.OK : ExitCodes.FAILURE;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true,
      description = "List the volumes this node has staged or published, with their allocations and phases.")
  static final class ListVolumes extends ResponseCommand<ListVolumesResponse> {
    @Override
    ListVolumesResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.listVolumes();
    }

    @Override
    void print(ListVolumesResponse r, PrintWriter out, PrintWriter err) {
      table(out, r.getVolumesList());
    }
  }

  /**
   * One row per allocation of a usage (a usage without allocation: one row, alloc "-"); then a line per abnormal
   * volume, per pending volume what it waits for, and per volume owed a node expansion.
   */
  static void table(PrintWriter out, List<VolumeInfo> volumes) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"PLUGIN", "VOLUME", "USAGE", "STAGE", "ALLOC", "PHASE", "TARGET"});
    for (VolumeInfo v : volumes) {
      String volume = v.getVolumeId() + (v.getAbnormal().isEmpty() ? "" : " (ABNORMAL)");
      if (v.getUsagesCount() == 0) {
        boolean onlyOwed = v.getNodeExpansionPending() && v.getController().equals("NONE");
        rows.add(new String[] {v.getPlugin(), volume, "-", "-", "-",
            onlyOwed ? "expansion owed" : "controller " + v.getController(), "-"});
      }
      for (VolumeUsageInfo u : v.getUsagesList()) {
        if (u.getAllocsCount() == 0) {
          rows.add(new String[] {v.getPlugin(), volume, u.getUsage(), u.getStage(), "-", "-", "-"});
        }
        for (VolumeAlloc a : u.getAllocsList()) {
          rows.add(new String[] {v.getPlugin(), volume, u.getUsage(), u.getStage(), a.getAllocId(), a.getPhase(),
              a.getTargetPath()});
        }
      }
    }
    Format.rows(out, rows);
    if (volumes.isEmpty()) {
      out.println("(no volumes on this node)");
    }
    for (VolumeInfo v : volumes) {
      if (!v.getAbnormal().isEmpty()) {
        out.println(v.getPlugin() + "/" + v.getVolumeId() + " is abnormal: " + v.getAbnormal());
      }
    }
    for (VolumeInfo v : volumes) {
      if (v.getPending()) {
        out.println(v.getPlugin() + "/" + v.getVolumeId() + " is pending" + (v.getForced() ? " (forced)" : "") + ": "
            + (v.getWaitingFor().isEmpty() ? "in progress" : v.getWaitingFor()));
      }
    }
    for (VolumeInfo v : volumes) {
      if (v.getNodeExpansionPending()) {
        out.println(v.getPlugin() + "/" + v.getVolumeId() + " is owed a node expansion"
            + (v.getNodeExpansionRequiredBytes() == 0 ? "" : " to " + Format.bytes(v.getNodeExpansionRequiredBytes()))
            + ": NodeExpandVolume after its next mount here");
      }
    }
  }

  @Command(name = "stats", mixinStandardHelpOptions = true,
      description = "Usage and condition of a mounted volume (NodeGetVolumeStats).")
  static final class Stats extends ResponseCommand<GetVolumeStatsResponse> {
    @CommandLine.Mixin Target target = new Target();
    @Option(names = "--alloc", paramLabel = "ALLOC_ID", defaultValue = "",
        description = "Where it is published for this alloc (default: its first publication).")
    String alloc;

    @Override
    GetVolumeStatsResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.volumeStats(GetVolumeStatsRequest.newBuilder().setPlugin(target.plugin)
          .setVolumeId(target.volume).setAllocId(alloc).build());
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

  @Command(name = "expand", mixinStandardHelpOptions = true,
      description = "Expand a volume (ControllerExpandVolume, then NodeExpandVolume where it is mounted).")
  static final class Expand extends ResponseCommand<ExpandVolumeResponse> {
    @CommandLine.Mixin Target target = new Target();
    @Option(names = "--size", required = true, paramLabel = "SIZE", description = "At least this size.")
    String size;
    @CommandLine.Mixin SecretsFile secrets = new SecretsFile();

    @Override
    ExpandVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.expandVolume(ExpandVolumeRequest.newBuilder().setPlugin(target.plugin)
          .setVolumeId(target.volume).setRequiredBytes(ByteSizes.parse(size))
          .putAllSecrets(secrets.read(spec.commandLine().getErr())).build());
    }

    @Override
    void print(ExpandVolumeResponse r, PrintWriter out, PrintWriter err) {
      out.println("expanded " + target.volume + (r.getCapacityBytes() == 0 ? "" : " to " + Format.bytes(r.getCapacityBytes()))
          + (r.getNodeExpansionPending() ? "; the node's part (NodeExpandVolume) is owed: done after its next mount"
              + " here" : ""));
    }
  }
}
