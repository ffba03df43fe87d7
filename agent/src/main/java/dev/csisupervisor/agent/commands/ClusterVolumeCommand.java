package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.common.ByteSizes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code csi-agent cluster volume create|delete|cancel|register|deregister|list|status|detach}: cluster volumes in
 * etcd, from any machine. A create or delete is a request written to etcd (desired state); the controller agent of
 * the plugin id (elected among the agents running a healthy controller of it) makes the CSI call and writes the
 * outcome, which the command waits for. An existing disk is registered by id.
 */
@Command(name = "volume", mixinStandardHelpOptions = true,
    description = "Cluster volumes in etcd: created, deleted or registered volumes, their claims and attachments.",
    subcommands = {ClusterVolumeCommand.Create.class, ClusterVolumeCommand.Delete.class,
        ClusterVolumeCommand.Cancel.class, ClusterVolumeCommand.Register.class, ClusterVolumeCommand.Deregister.class,
        ClusterVolumeCommand.ListVolumes.class, ClusterVolumeCommand.Status.class, ClusterVolumeCommand.Detach.class})
final class ClusterVolumeCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(),
        "Missing command: create, delete, cancel, register, deregister, list, status or detach");
  }

  /** One etcd session for a command: its errors are one line and exit code 1. */
  abstract static class VolumeCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Mixin
    ClusterCommand.EtcdCliOptions etcd = new ClusterCommand.EtcdCliOptions();

    abstract int run(ClusterVolumes volumes, PrintWriter out) throws VolumeStateException;

    /** What the command did: {@code text} for people, or with {@code --json} the object {@code json}. */
    final void say(PrintWriter out, String text, Map<String, Object> json) {
      if (etcd.json) {
        ClusterCommand.printJson(out, json);
      } else {
        out.println(text);
      }
    }

    /** A request as {@code --json} shows it, with its progress (as it stands now). */
    @SuppressWarnings("unchecked")
    static Map<String, Object> request(ClusterVolumeRequest r, ClusterVolumes v) {
      return (Map<String, Object>) ClusterViews.requestsJson(v.read(), x -> x.kind() == r.kind()
              && x.pluginId().equals(r.pluginId()) && x.name().equals(r.name())).stream().findFirst()
          .orElse(Map.of("kind", r.kind().name(), "plugin", r.pluginId(), "name", r.name(), "state", r.state().name()));
    }

    @Override
    public final Integer call() {
      CommandLine cmd = spec.commandLine();
      ClusterCommand.EtcdCliOptions.Target t = etcd.target(cmd);
      try (ClusterVolumes v = ClusterVolumes.builder().etcd(t.etcd()).prefix(t.prefix()).nodeId("csi-agent-cli").build()) {
        return run(v, cmd.getOut());
      } catch (EtcdException e) {
        cmd.getErr().println("csi-agent: cannot reach etcd: " + e.getMessage());
        return ExitCodes.FAILURE;
      } catch (VolumeStateException e) {
        cmd.getErr().println("csi-agent: " + e.getMessage());
        return ExitCodes.FAILURE;
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(cmd, e.getMessage());
      }
    }
  }

  /** How often a waiting create or delete reads its request again. */
  private static final Duration POLL = Duration.ofMillis(200);

  /** The options a create or delete shares: the secrets file and the wait. */
  static final class RequestOptions {
    @Option(names = "--secrets-file", paramLabel = "FILE",
        description = "An absolute path the controller agent reads the call's secrets from, on its own machine "
            + "(key=value lines); only the path is written to etcd, never a secret.")
    String secretsFile;

    @Option(names = "--wait", paramLabel = "SECONDS", defaultValue = "60",
        description = "How long to wait for the controller agent's outcome (default 60; 0: ask and return).")
    int waitSeconds;

    Optional<Path> secretsFile() {
      if (secretsFile == null) {
        return Optional.empty();
      }
      Path p;
      try {
        p = Path.of(secretsFile);
      } catch (java.nio.file.InvalidPathException e) {
        throw new IllegalArgumentException("--secrets-file is not a path: '" + secretsFile + "'", e);
      }
      if (!p.isAbsolute()) {
        throw new IllegalArgumentException("--secrets-file must be an absolute path (the controller agent reads it on "
            + "its own machine), got '" + secretsFile + "'");
      }
      return Optional.of(p);
    }

    Duration waitFor() {
      if (waitSeconds < 0) {
        throw new IllegalArgumentException("--wait must not be negative, got " + waitSeconds);
      }
      return Duration.ofSeconds(waitSeconds);
    }
  }

  /**
   * Refuses a request no agent can act on now: the plugin id unknown in the catalog (a bad argument), or none of its
   * controllers healthy with CREATE_DELETE_VOLUME (said with what there is).
   *
   * @return why not, or empty if some controller agent can act
   */
  static Optional<String> noController(ClusterVolumes v, String plugin) {
    List<CatalogEntry> controllers = v.controllersOf(plugin);
    if (controllers.isEmpty()) {
      throw new IllegalArgumentException("PLUGIN: no controller plugin '" + plugin + "' is registered in the cluster "
          + "(csi-agent cluster plugins lists what is)");
    }
    List<String> what = new ArrayList<>();
    for (CatalogEntry e : controllers) {
      if (e.healthy() && e.controllerCapabilities().contains("CREATE_DELETE_VOLUME")) {
        return Optional.empty();
      }
      what.add("node " + e.nodeId() + ": " + (!e.healthy() ? "unhealthy" + (e.healthMessage().isEmpty() ? ""
          : " (" + e.healthMessage() + ")") : "no CREATE_DELETE_VOLUME"));
    }
    return Optional.of("no healthy controller of plugin " + plugin + " with CREATE_DELETE_VOLUME in the cluster ("
        + String.join("; ", what) + "): nothing was asked");
  }

  /** Reads the request until it is done, failed or the wait is over. */
  static Optional<ClusterVolumeRequest> await(ClusterVolumes v, ClusterVolumeRequest.Kind kind, String plugin,
      String name, Duration wait, java.util.function.Predicate<Optional<ClusterVolumeRequest>> over) {
    long end = System.nanoTime() + wait.toNanos();
    while (true) {
      Optional<ClusterVolumeRequest> r = v.request(kind, plugin, name);
      if (over.test(r) || System.nanoTime() - end >= 0) {
        return r;
      }
      try {
        Thread.sleep(POLL.toMillis()); // the CLI's poll of etcd while it waits for the controller agent
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return r;
      }
    }
  }

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = "Creates a volume through the controller agent of the plugin id (CreateVolume by NAME, "
          + "idempotent) and registers it; waits for the outcome.")
  static final class Create extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", paramLabel = "NAME", description = "The volume's name: CreateVolume's idempotency key.")
    String name;
    @Option(names = "--size", paramLabel = "SIZE", description = "At least this size: bytes, or 512MiB, 10GiB.")
    String size;
    @Option(names = "--limit", paramLabel = "SIZE", description = "At most this size.")
    String limit;
    @Option(names = "--access-mode", paramLabel = "MODE", split = ",", defaultValue = "single-node-writer",
        description = "Access modes it must support (default single-node-writer); claims may ask for these only.")
    List<String> modes = new ArrayList<>();
    @Option(names = "--block", description = "A raw block volume instead of a file system.") boolean block;
    @Option(names = "--fs-type", paramLabel = "TYPE", defaultValue = "", description = "File system type (mount).")
    String fsType;
    @Option(names = "--parameter", paramLabel = "KEY=VALUE", description = "A CreateVolume parameter (never a secret).")
    Map<String, String> parameters = new TreeMap<>();
    @Option(names = "--topology", paramLabel = "KEY=VALUE[,...]",
        description = "A segment it must be accessible from (requisite); repeat for more segments.")
    List<String> requisite = new ArrayList<>();
    @Option(names = "--preferred-topology", paramLabel = "KEY=VALUE[,...]",
        description = "A segment to prefer, in order (each one of --topology, if given).")
    List<String> preferred = new ArrayList<>();
    @Mixin RequestOptions request = new RequestOptions();

    @Override
    int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
      // Step 1: every argument, each named, before anything is asked of etcd.
      CsiIds.checkPlugin("PLUGIN", plugin);
      CsiIds.checkVolume("NAME", name);
      long required = size == null ? 0 : bytes("--size", size);
      long max = limit == null ? 0 : bytes("--limit", limit);
      if (max != 0 && required > max) {
        throw new IllegalArgumentException("--size must not be more than --limit, got " + size + " > " + limit);
      }
      Set<VolumeAccessMode> m = EnumSet.noneOf(VolumeAccessMode.class);
      for (String s : modes) {
        m.add(VolumeAccessMode.parse("--access-mode", s));
      }
      if (block && !fsType.isEmpty()) {
        throw new IllegalArgumentException("--fs-type is for a file system, not with --block, got '" + fsType + "'");
      }
      ClusterVolumeRequest.Spec wanted = new ClusterVolumeRequest.Spec(required, max, m, block, fsType, parameters,
          segments("--topology", requisite), segments("--preferred-topology", preferred));
      ClusterVolumeRequest asked = ClusterVolumeRequest.create(plugin, name, wanted, request.secretsFile(),
          Instant.now());
      Duration wait = request.waitFor();
      // Step 2: someone to act on it.
      Optional<String> none = noController(v, plugin);
      if (none.isPresent()) {
        spec.commandLine().getErr().println("csi-agent: create of " + plugin + "/" + name + " refused: " + none.get());
        return ExitCodes.FAILURE;
      }
      // Step 3: the request, then its outcome.
      ClusterVolumeRequest stored = v.requestCreate(asked);
      if (wait.isZero() && stored.state() == ClusterVolumeRequest.State.PENDING) {
        say(out, "asked: " + stored.describe() + " (csi-agent cluster volume status shows its progress)",
            Map.of("asked", true, "request", request(stored, v)));
        return ExitCodes.OK;
      }
      Optional<ClusterVolumeRequest> r = await(v, ClusterVolumeRequest.Kind.CREATE, plugin, name, wait,
          x -> x.isEmpty() || x.get().state() != ClusterVolumeRequest.State.PENDING);
      return outcome(v, r, out);
    }

    private int outcome(ClusterVolumes v, Optional<ClusterVolumeRequest> r, PrintWriter out) {
      PrintWriter err = spec.commandLine().getErr();
      if (r.isEmpty()) {
        err.println("csi-agent: create of " + plugin + "/" + name + " was withdrawn meanwhile");
        return ExitCodes.FAILURE;
      }
      switch (r.get().state()) {
        case DONE -> {
          Optional<ClusterVolume> vol = v.volume(plugin, r.get().volumeId());
          Map<String, Object> json = new LinkedHashMap<>();
          json.put("created", true);
          json.put("name", name);
          json.put("controller", r.get().controllerNodeId());
          json.put("volume", vol.map(x -> (Object) ClusterViews.volume(x, v.read()))
              .orElse(Map.of("plugin", plugin, "volume", r.get().volumeId())));
          say(out, "created volume " + r.get().volumeId() + " (" + vol.map(x -> x.capacityBytes() == 0 ? "size unknown"
              : ByteSizes.format(x.capacityBytes())).orElse("deregistered since") + ") of plugin " + plugin + " as "
              + name + (r.get().controllerNodeId().isEmpty() ? "" : " through controller agent "
              + r.get().controllerNodeId()) + vol.filter(x -> !x.accessibleTopology().isEmpty())
              .map(x -> ", accessible from " + x.accessibleTopology()).orElse(""), json);
          return ExitCodes.OK;
        }
        case FAILED -> {
          err.println("csi-agent: " + r.get().message());
          return ExitCodes.FAILURE;
        }
        default -> {
          return notDone(err, r.get(), request.waitSeconds, v);
        }
      }
    }
  }

  @Command(name = "delete", mixinStandardHelpOptions = true,
      description = "Deletes a registered volume through the controller agent of the plugin id (DeleteVolume), then "
          + "its record; refused while it is claimed or attached. Waits for the outcome.")
  static final class Delete extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;
    @Mixin RequestOptions request = new RequestOptions();

    @Override
    int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
      CsiIds.checkPlugin("PLUGIN", plugin);
      CsiIds.checkVolume("VOLUME_ID", volumeId);
      ClusterVolumeRequest asked = ClusterVolumeRequest.delete(plugin, volumeId, request.secretsFile(), Instant.now());
      Duration wait = request.waitFor();
      PrintWriter err = spec.commandLine().getErr();
      if (v.volume(plugin, volumeId).isEmpty()) {
        say(out, plugin + "/" + volumeId + " is not registered: nothing to delete",
            Map.of("deleted", false, "registered", false, "plugin", plugin, "volume", volumeId));
        return ExitCodes.OK;
      }
      Optional<String> none = noController(v, plugin);
      if (none.isPresent()) {
        err.println("csi-agent: delete of " + plugin + "/" + volumeId + " refused: " + none.get());
        return ExitCodes.FAILURE;
      }
      Optional<ClusterVolumeRequest> stored = v.requestDelete(asked);
      if (stored.isEmpty()) {
        say(out, plugin + "/" + volumeId + " is not registered: nothing to delete",
            Map.of("deleted", false, "registered", false, "plugin", plugin, "volume", volumeId));
        return ExitCodes.OK;
      }
      if (wait.isZero()) {
        say(out, "asked: " + stored.get().describe() + " (csi-agent cluster volume status shows its progress)",
            Map.of("asked", true, "request", request(stored.get(), v)));
        return ExitCodes.OK;
      }
      Optional<ClusterVolumeRequest> r = await(v, ClusterVolumeRequest.Kind.DELETE, plugin, volumeId, wait,
          x -> x.isEmpty() || x.get().state() == ClusterVolumeRequest.State.FAILED);
      if (r.isEmpty()) {
        if (v.volume(plugin, volumeId).isPresent()) {
          err.println("csi-agent: delete of " + plugin + "/" + volumeId + " was withdrawn meanwhile");
          return ExitCodes.FAILURE;
        }
        say(out, "deleted volume " + volumeId + " of plugin " + plugin,
            Map.of("deleted", true, "plugin", plugin, "volume", volumeId));
        return ExitCodes.OK;
      }
      if (r.get().state() == ClusterVolumeRequest.State.FAILED) {
        err.println("csi-agent: " + r.get().message() + " (the volume stays registered and refuses new claims while "
            + "the delete is asked: delete again to retry, or cluster volume cancel delete " + plugin + " " + volumeId
            + ")");
        return ExitCodes.FAILURE;
      }
      return notDone(err, r.get(), request.waitSeconds, v);
    }
  }

  /** A wait that ran out: where the request is, and that it stays asked. */
  static int notDone(PrintWriter err, ClusterVolumeRequest r, int seconds, ClusterVolumes v) {
    String kind = r.kind().name().toLowerCase(java.util.Locale.ROOT);
    err.println("csi-agent: " + r.describe() + " not done after " + seconds + " s: " + ClusterViews.progress(r, v.read())
        + ". It stays asked: cluster volume status shows it, the same " + kind + " waits for it again, cluster volume "
        + "cancel " + kind + " " + r.pluginId() + " " + r.name() + " withdraws it");
    return ExitCodes.FAILURE;
  }

  @Command(name = "cancel", mixinStandardHelpOptions = true,
      description = "Withdraws a create or delete request that is not done (pending or failed). A create already "
          + "sent may still make its volume in the plugin; asked again by the same name, it is found.")
  static final class Cancel extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "create|delete") String kind;
    @Parameters(index = "1", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "2", paramLabel = "NAME_OR_VOLUME_ID") String name;

    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      ClusterVolumeRequest.Kind k = switch (kind) {
        case "create" -> ClusterVolumeRequest.Kind.CREATE;
        case "delete" -> ClusterVolumeRequest.Kind.DELETE;
        default -> throw new IllegalArgumentException("the first argument must be create or delete, got '" + kind + "'");
      };
      CsiIds.checkPlugin("PLUGIN", plugin);
      CsiIds.checkVolume("NAME_OR_VOLUME_ID", name);
      boolean withdrew = v.withdraw(k, plugin, name);
      say(out, withdrew ? "withdrew the " + kind + " of " + plugin + "/" + name
          : "no pending or failed " + kind + " of " + plugin + "/" + name,
          Map.of("withdrew", withdrew, "kind", k.name(), "plugin", plugin, "name", name));
      return ExitCodes.OK;
    }
  }

  private static long bytes(String field, String text) {
    long b;
    try {
      b = ByteSizes.parse(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(field + ": " + e.getMessage(), e);
    }
    if (b <= 0) {
      throw new IllegalArgumentException(field + " must be positive, got '" + text + "'");
    }
    return b;
  }

  /** {@code k=v,k2=v2} per segment. */
  static List<Map<String, String>> segments(String field, List<String> given) {
    List<Map<String, String>> segments = new ArrayList<>();
    for (String seg : given) {
      Map<String, String> kv = new TreeMap<>();
      for (String pair : seg.split(",")) {
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException(field + " must be KEY=VALUE[,KEY=VALUE...], got '" + seg + "'");
        }
        kv.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
      }
      segments.add(kv);
    }
    return segments;
  }

  @Command(name = "register", mixinStandardHelpOptions = true,
      description = "Registers an existing volume (a disk) by id: what claims check against.")
  static final class Register extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;
    @Option(names = "--capacity", paramLabel = "BYTES", description = "Its capacity in bytes (default 0: unknown).")
    long capacity;
    @Option(names = "--access-mode", paramLabel = "MODE", split = ",",
        description = "Access modes a claim may ask for (default: any), e.g. single-node-writer,multi-node-reader-only.")
    List<String> modes = new ArrayList<>();
    @Option(names = "--topology", paramLabel = "KEY=VALUE[,...]",
        description = "A segment of the volume's accessible topology; repeat for more segments (default: everywhere).")
    List<String> topology = new ArrayList<>();
    @Option(names = "--parameter", paramLabel = "KEY=VALUE") Map<String, String> parameters = new TreeMap<>();
    @Option(names = "--context", paramLabel = "KEY=VALUE", description = "Its volume context (never secrets).")
    Map<String, String> context = new TreeMap<>();

    @Override
    int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
      Set<VolumeAccessMode> m = EnumSet.noneOf(VolumeAccessMode.class);
      for (String s : modes) {
        m.add(VolumeAccessMode.parse("--access-mode", s));
      }
      List<Map<String, String>> segments = segments("--topology", topology);
      boolean wrote = v.register(new ClusterVolume(plugin, volumeId, capacity, m, segments, parameters, context));
      say(out, wrote ? "registered " + plugin + "/" + volumeId : plugin + "/" + volumeId + " was registered already",
          Map.of("registered", true, "written", wrote, "plugin", plugin, "volume", volumeId));
      return ExitCodes.OK;
    }
  }

  @Command(name = "deregister", mixinStandardHelpOptions = true,
      description = "Removes a volume's record; refused while it is claimed or attached.")
  static final class Deregister extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;

    @Override
    int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
      boolean gone = v.deregister(plugin, volumeId);
      say(out, gone ? "deregistered " + plugin + "/" + volumeId : plugin + "/" + volumeId + " was not registered",
          Map.of("deregistered", gone, "plugin", plugin, "volume", volumeId));
      return ExitCodes.OK;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "Every registered volume, with its claims.")
  static final class ListVolumes extends VolumeCommand {
    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      VolumesSnapshot s = v.read();
      if (etcd.json) {
        List<Object> all = new ArrayList<>();
        s.volumes().forEach(vol -> all.add(ClusterViews.volume(vol, s)));
        ClusterCommand.printJson(out, Map.of("revision", s.revision(), "volumes", all, "requests",
            ClusterViews.requestsJson(s, r -> r.state() != ClusterVolumeRequest.State.DONE)));
        return ExitCodes.OK;
      }
      out.printf("%-20s %-40s %-8s %s%n", "PLUGIN", "VOLUME", "CLAIMS", "ATTACHED TO");
      for (ClusterVolume vol : s.volumes()) {
        out.printf("%-20s %-40s %-8d %s%n", vol.pluginId(), vol.volumeId(), s.claimsOf(vol.pluginId(), vol.volumeId()).size(),
            s.attachmentsOf(vol.pluginId(), vol.volumeId()).stream().map(a -> a.nodeId() + "(" + a.state() + ")").toList());
      }
      printRequests(s, r -> true, out);
      return ExitCodes.OK;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true,
      description = "Claims, attachments and stuck items of every volume (or one), and the controller agent per plugin.")
  static final class Status extends VolumeCommand {
    @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      VolumesSnapshot s = v.read();
      if (etcd.json) {
        ClusterCommand.printJson(out, ClusterViews.volumeStatus(s, plugin, volumeId));
        return ExitCodes.OK;
      }
      out.println("controller agents: " + (s.controllers().isEmpty() ? "none elected" : new TreeMap<>(s.controllers())));
      for (ClusterVolume vol : s.volumes()) {
        if (!selected(vol)) {
          continue;
        }
        out.println(vol.pluginId() + "/" + vol.volumeId() + (vol.accessModes().isEmpty() ? "" : " " + vol.accessModes())
            + (vol.accessibleTopology().isEmpty() ? "" : " at " + vol.accessibleTopology())
            + s.createOf(vol.pluginId(), vol.volumeId()).map(r -> " (created as " + r.name() + ")").orElse("")
            + s.deleteOf(vol.pluginId(), vol.volumeId()).map(r -> " BEING DELETED").orElse(""));
        for (ClusterClaim c : s.claimsOf(vol.pluginId(), vol.volumeId())) {
          out.println("  claim " + c.holder() + " " + c.mode() + (c.readOnly() ? " read-only" : "") + " since " + c.since()
              + ClusterViews.nodeState(s, c.nodeId()));
        }
        for (ClusterAttachment a : s.attachmentsOf(vol.pluginId(), vol.volumeId())) {
          out.println("  attachment node " + a.nodeId() + " " + a.state() + " by " + a.controllerNodeId() + " since "
              + a.since() + (a.message().isEmpty() ? "" : ": " + a.message()));
        }
      }
      printRequests(s, r -> selected(r.pluginId(), r.kind() == ClusterVolumeRequest.Kind.DELETE ? r.name() : null),
          out);
      ClusterViews.stuck(s).forEach(line -> out.println("STUCK: " + line));
      return ExitCodes.OK;
    }

    private boolean selected(ClusterVolume vol) {
      return selected(vol.pluginId(), vol.volumeId());
    }

    private boolean selected(String p, String v) {
      return ClusterViews.selected(plugin, volumeId, p, v);
    }
  }

  @Command(name = "detach", mixinStandardHelpOptions = true,
      description = "With --force: deletes a node's claims (of one volume, or all) and its attachments WITHOUT any "
          + "controller unpublish or node unmount. Only for a node that is gone for good, once its disks are "
          + "detached by hand: another node may then attach and write them.")
  static final class Detach extends VolumeCommand {
    @Option(names = "--node", required = true, paramLabel = "NODE") String node;
    @Option(names = "--force", description = "Required: say that you mean it.") boolean force;
    @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      if (!force) {
        throw new IllegalArgumentException("detach needs --force: it releases node " + node + "'s claims without any "
            + "unpublish or unmount (a lost node's claims go by themselves once it is back, or after detach_after)");
      }
      List<ClusterClaim> gone = v.forceDetach(node, Optional.ofNullable(plugin), Optional.ofNullable(volumeId));
      say(out, "released " + gone.size() + " claim(s) of node " + node + " without unpublish or unmount: "
          + gone.stream().map(c -> c.pluginId() + "/" + c.volumeId() + " alloc " + c.allocId()).toList(),
          Map.of("node", node, "released", gone.stream().map(c -> Map.of("plugin", c.pluginId(), "volume",
              c.volumeId(), "alloc", c.allocId(), "mode", c.mode().name())).toList()));
      return ExitCodes.OK;
    }
  }

  /** The requests not done (in flight, waiting, retried, failed), one line each. */
  static void printRequests(VolumesSnapshot s, java.util.function.Predicate<ClusterVolumeRequest> selected,
      PrintWriter out) {
    List<ClusterVolumeRequest> open = s.requests().stream()
        .filter(r -> r.state() != ClusterVolumeRequest.State.DONE && selected.test(r)).toList();
    if (!open.isEmpty()) {
      out.println("requests:");
      open.forEach(r -> out.println("  " + r.describe() + " asked " + r.requested() + ": " + ClusterViews.progress(r, s)));
    }
  }
}
