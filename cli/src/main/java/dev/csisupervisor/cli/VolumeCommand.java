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
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/**
 * {@code csi-agent volume create|delete|mount|unmount|release|list|stats|expand|gc}: the agent's node volumes.
 * Secrets are read from a file ({@code --secrets-file}: one {@code key=value} per line, {@code #}
 * comments), never taken from the command line, where {@code ps} and shell histories would show them.
 *
 * <p>The models are built with picocli's programmatic API ({@link CommandSpecs}); {@link #spec} builds the group with
 * only the subcommand a command line runs, or with all nine for help and usage errors.
 */
final class VolumeCommand implements Runnable {
  /** The subcommands, in the order help lists them. */
  static final List<String> SUBCOMMANDS = List.of("create", "delete", "mount", "unmount", "release", "list", "stats",
      "expand", "gc");

  private final CommandSpec spec = CommandSpecs.command(this, "volume",
      "Create, mount, unmount, list, inspect, expand and delete node volumes through the agent;"
          + " release an allocation's volumes; find and unmount orphan mounts.");

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing volume command");
  }

  /**
   * The {@code volume} group: with only {@code subcommand} if it is one of {@link #SUBCOMMANDS}, else with all of
   * them.
   */
  static CommandSpec spec(AgentConfigReader configs, String subcommand) {
    CommandSpec spec = new VolumeCommand().spec;
    for (String name : subcommand != null && SUBCOMMANDS.contains(subcommand) ? List.of(subcommand) : SUBCOMMANDS) {
      spec.addSubcommand(name, subcommand(configs, name));
    }
    return spec;
  }

  /** The model of the subcommand {@code name}, one of {@link #SUBCOMMANDS}. */
  private static CommandSpec subcommand(AgentConfigReader configs, String name) {
    return switch (name) {
      case "create" -> new Create(configs).spec;
      case "delete" -> new Delete(configs).spec;
      case "mount" -> new Mount(configs).spec;
      case "unmount" -> new Unmount(configs).spec;
      case "release" -> new Release(configs).spec;
      case "list" -> new ListVolumes(configs).spec;
      case "stats" -> new Stats(configs).spec;
      case "expand" -> new Expand(configs).spec;
      case "gc" -> new Gc(configs).spec;
      default -> throw new IllegalArgumentException("no volume command " + name);
    };
  }

  /** A required {@code --alloc=ALLOC_ID}. */
  private static OptionSpec.Builder allocOption() {
    return CommandSpecs.option("--alloc", "ALLOC_ID", String.class).required(true);
  }

  /** The options every volume command that names a volume has. */
  static final class Target {
    private final OptionSpec plugin;
    private final OptionSpec volume;

    Target(CommandSpec spec) {
      plugin = CommandSpecs.add(spec, CommandSpecs.option("--plugin", "ID", String.class, "The plugin's id.")
          .required(true));
      volume = CommandSpecs.add(spec, CommandSpecs.option("--volume", "VOLUME_ID", String.class,
          "The volume's id.").required(true));
    }

    String plugin() {
      return CommandSpecs.value(plugin);
    }

    String volume() {
      return CommandSpecs.value(volume);
    }
  }

  /** How the volume is accessed. */
  static final class Access {
    private final OptionSpec accessMode;
    private final OptionSpec block;
    private final OptionSpec fsType;
    private final OptionSpec mountFlags;
    private final OptionSpec mountGroup;

    Access(CommandSpec spec) {
      accessMode = CommandSpecs.add(spec, CommandSpecs.option("--access-mode", "MODE", String.class,
          "CSI access mode: single-node-writer (default), single-node-reader-only, "
              + "multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer, "
              + "single-node-single-writer, single-node-multi-writer.").defaultValue("single-node-writer"));
      block = CommandSpecs.add(spec, CommandSpecs.flag("--block", "A raw block device instead of a file system mount."));
      fsType = CommandSpecs.add(spec, CommandSpecs.option("--fs-type", "TYPE", String.class,
          "File system type (mount).").defaultValue(""));
      mountFlags = CommandSpecs.add(spec, CommandSpecs.option("--mount-flag", "FLAG", List.class,
          "A mount flag (repeatable).").auxiliaryTypes(String.class));
      mountGroup = CommandSpecs.add(spec, CommandSpecs.option("--mount-group", "GID", String.class,
          "The group that should own the mounted volume (VOLUME_MOUNT_GROUP).").defaultValue(""));
    }

    VolumeAccess proto() {
      List<String> flags = CommandSpecs.value(mountFlags);
      return VolumeAccess.newBuilder().setAccessType(CommandSpecs.isSet(block) ? "block" : "mount")
          .setFsType(CommandSpecs.value(fsType)).addAllMountFlags(flags == null ? List.of() : flags)
          .setAccessMode(CommandSpecs.value(accessMode)).setVolumeMountGroup(CommandSpecs.value(mountGroup)).build();
    }
  }

  /** {@code --secrets-file}. */
  static final class SecretsFile {
    private final OptionSpec file;

    SecretsFile(CommandSpec spec) {
      file = CommandSpecs.add(spec, CommandSpecs.option("--secrets-file", "FILE", Path.class,
          "Secrets for the plugin: one key=value per line (# comments). Never on the command line."));
    }

    /** The file given, or null. */
    Path file() {
      return CommandSpecs.value(file);
    }

    Map<String, String> read(PrintWriter err) {
      return file() == null ? Map.of() : readSecrets(file(), err);
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

  static final class Create extends ResponseCommand<CreateVolumeResponse> {
    private final OptionSpec plugin = CommandSpecs.add(spec, CommandSpecs.option("--plugin", "ID", String.class)
        .required(true));
    private final OptionSpec name = CommandSpecs.add(spec, CommandSpecs.option("--name", "NAME", String.class,
        "The volume's name (idempotency key).").required(true));
    private final OptionSpec size = CommandSpecs.add(spec, CommandSpecs.option("--size", "SIZE", String.class,
        "At least this size: bytes, or 512MiB, 10GiB."));
    private final Access access = new Access(spec);
    private final OptionSpec parameters = CommandSpecs.add(spec, CommandSpecs.map("--parameter", "K=V",
        "A plugin parameter (repeatable)."));
    private final OptionSpec topology = CommandSpecs.add(spec, CommandSpecs.map("--topology", "KEY=VALUE",
        "A topology segment the volume must be accessible from (repeatable; together one segment set,"
            + " e.g. topology.ebs.csi.aws.com/zone=eu-west-1a). Default: this node's, if the plugin is topology-aware."));
    private final SecretsFile secrets = new SecretsFile(spec);

    Create(AgentConfigReader configs) {
      super(configs, "create", "Create a volume through the plugin's controller (CreateVolume).");
    }

    @Override
    CreateVolumeResponse ask(AdminClient client) throws AdminClient.AdminException {
      CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder().setPlugin(CommandSpecs.value(plugin))
          .setName(CommandSpecs.value(name)).setAccess(access.proto())
          .putAllParameters(pairs(CommandSpecs.value(parameters))).putAllTopology(pairs(CommandSpecs.value(topology)))
          .putAllSecrets(secrets.read(spec.commandLine().getErr()));
      String size = CommandSpecs.value(this.size);
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

  static final class Delete extends ResponseCommand<DeleteVolumeResponse> {
    private final Target target = new Target(spec);
    private final SecretsFile secrets = new SecretsFile(spec);

    Delete(AgentConfigReader configs) {
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

  static final class Mount extends ResponseCommand<MountVolumeResponse> {
    private final Target target = new Target(spec);
    private final OptionSpec alloc = CommandSpecs.add(spec, allocOption());
    private final Access access = new Access(spec);
    private final OptionSpec readOnly = CommandSpecs.add(spec, CommandSpecs.flag("--read-only", "Publish read-only."));
    private final OptionSpec context = CommandSpecs.add(spec, CommandSpecs.map("--context", "K=V",
        "Volume context (repeatable)."));
    private final OptionSpec publishContext = CommandSpecs.add(spec, CommandSpecs.map("--publish-context", "K=V",
        "Publish context (repeatable)."));
    private final SecretsFile secrets = new SecretsFile(spec);

    Mount(AgentConfigReader configs) {
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

  static final class Unmount extends ResponseCommand<UnmountVolumeResponse> {
    static final int PENDING = 3;
    private final Target target = new Target(spec);
    private final OptionSpec alloc = CommandSpecs.add(spec, allocOption());
    private final Wait wait = new Wait(spec);
    private final SecretsFile secrets = new SecretsFile(spec);
    private final OptionSpec force = CommandSpecs.add(spec, CommandSpecs.flag("--force", "For a node plugin that is"
        + " gone for good: the agent unmounts the targets and the staging itself (what the plugin cannot do) and"
        + " removes their empty directories, then does the controller side; what it cannot do stays pending and is"
        + " reported."));

    Unmount(AgentConfigReader configs) {
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

  /** {@code --wait}: how long an unmount or a release waits before it answers "pending". */
  static final class Wait {
    private final OptionSpec seconds;

    Wait(CommandSpec spec) {
      seconds = CommandSpecs.add(spec, CommandSpecs.option("--wait", "SECONDS", int.class,
          "How long to wait for it to finish (default ${DEFAULT-VALUE}).").defaultValue("30"));
    }

    /** The wait, checked. */
    int seconds(CommandSpec spec) {
      int seconds = CommandSpecs.value(this.seconds);
      if (seconds < 1) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--wait must be >= 1, got " + seconds);
      }
      return seconds;
    }
  }

  static final class Release extends ResponseCommand<ReleaseAllocResponse> {
    private final OptionSpec alloc = CommandSpecs.add(spec, allocOption());
    private final Wait wait = new Wait(spec);
    private final OptionSpec force = CommandSpecs.add(spec, CommandSpecs.flag("--force", "Each unmount forced (see"
        + " volume unmount --help): for a node plugin that is gone for good."));

    Release(AgentConfigReader configs) {
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
      return r.getDone() ? ExitCodes.OK : Unmount.PENDING;
    }
  }

  static final class Gc extends ResponseCommand<CollectOrphansResponse> {
    private final OptionSpec yes = CommandSpecs.add(spec, CommandSpecs.flag("--yes",
        "Unmount them (and remove their empty directories)."));

    Gc(AgentConfigReader configs) {
      super(configs, "gc", "List the orphan mounts: mount points under the CSI root's staging/ and per-alloc/"
          + " directories that no volume record names (a crash before the record was written, another agent,"
          + " a hand); with --yes, unmount them.",
          "None are found when the agent does not verify mounts (volumes.verify_mounts: false).",
          "Exit 0; 1 if one could not be unmounted.");
    }

    @Override
    CollectOrphansResponse ask(AdminClient client) throws AdminClient.AdminException {
      return client.collectOrphans(CommandSpecs.isSet(yes));
    }

    @Override
    void print(CollectOrphansResponse r, PrintWriter out, PrintWriter err) {
      if (r.getOrphansCount() == 0) {
        out.println("no orphan mounts: every mount under the CSI root's staging/ and per-alloc/ directories"
            + " belongs to a volume");
        return;
      }
      if (!CommandSpecs.isSet(yes)) {
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

  static final class ListVolumes extends ResponseCommand<ListVolumesResponse> {
    ListVolumes(AgentConfigReader configs) {
      super(configs, "list", "List the volumes this node has staged or published, with their allocations and phases.");
    }

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

  static final class Stats extends ResponseCommand<GetVolumeStatsResponse> {
    private final Target target = new Target(spec);
    private final OptionSpec alloc = CommandSpecs.add(spec, CommandSpecs.option("--alloc", "ALLOC_ID", String.class,
        "Where it is published for this alloc (default: its first publication).").defaultValue(""));

    Stats(AgentConfigReader configs) {
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

  static final class Expand extends ResponseCommand<ExpandVolumeResponse> {
    private final Target target = new Target(spec);
    private final OptionSpec size = CommandSpecs.add(spec, CommandSpecs.option("--size", "SIZE", String.class,
        "At least this size.").required(true));
    private final SecretsFile secrets = new SecretsFile(spec);

    Expand(AgentConfigReader configs) {
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
}
