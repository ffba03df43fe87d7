package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.ByteSizes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
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
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume create}: a create request, then its outcome. */
@Command(name = "create", mixinStandardHelpOptions = true,
    description = "Creates a volume through the controller agent of the plugin id (CreateVolume by NAME, "
        + "idempotent) and registers it; waits for the outcome. With --from-snapshot or --clone-of it is made from "
        + "that source, at least the source's size.")
final class ClusterVolumeCreateCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "NAME", description = "The volume's name: CreateVolume's idempotency key.")
  String name;
  @Option(names = "--size", paramLabel = "SIZE",
      description = "At least this size: bytes, or 512MiB, 10GiB (from a source: default and at least its size).")
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
  @Option(names = "--from-snapshot", paramLabel = "ID_OR_NAME",
      description = "Restore a snapshot of the plugin id: its id, or the name it was asked by (needs "
          + "CREATE_DELETE_SNAPSHOT). A snapshot not ready yet: the create waits for it.")
  String fromSnapshot;
  @Option(names = "--clone-of", paramLabel = "VOLUME_ID",
      description = "Clone a registered volume of the plugin id (needs CLONE_VOLUME).")
  String cloneOf;
  @Option(names = "--mutable-parameter", paramLabel = "KEY=VALUE",
      description = "A mutable parameter sent at create (needs MODIFY_VOLUME); cluster volume modify changes it later.")
  Map<String, String> mutable = new TreeMap<>();
  @Mixin ClusterVolumeRequests.RequestOptions request = new ClusterVolumeRequests.RequestOptions();

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
        segments("--topology", requisite), segments("--preferred-topology", preferred))
        .withMutableParameters(ClusterVolumeRequests.keyValues("--mutable-parameter", mutable));
    if (fromSnapshot != null && cloneOf != null) {
      throw new IllegalArgumentException("--from-snapshot and --clone-of exclude each other (a volume has one "
          + "source), got --from-snapshot " + fromSnapshot + " and --clone-of " + cloneOf);
    }
    // Step 2: the source, found in etcd, and its size (a volume made from it is at least as big: CSI).
    Optional<Source> from = source(v);
    if (from.isPresent()) {
      wanted = wanted.from(from.get().source());
      if (required != 0 && from.get().sizeBytes() != 0 && required < from.get().sizeBytes()) {
        throw new IllegalArgumentException("--size " + size + " is smaller than its source " + from.get().source()
            + " (" + ByteSizes.format(from.get().sizeBytes()) + "): a volume made from a source is at least as big "
            + "(CSI); leave --size out to get the source's size");
      }
    }
    ClusterVolumeRequest asked = ClusterVolumeRequest.create(plugin, name, wanted, request.secretsFile(),
        Instant.now());
    request.waitFor();
    PrintWriter err = spec.commandLine().getErr();
    if (from.isPresent() && !from.get().ready()) {
      Optional<String> none = ClusterVolumeRequests.noController(v, asked);
      if (none.isPresent()) {
        return ClusterVolumeRequests.refused(err, asked, none.get());
      }
      err.println("csi-agent: " + from.get().source() + " is not ready yet: the create waits for it, sending nothing "
          + "until it is (csi-agent cluster volume snapshot list " + plugin + ")");
    }
    // Step 3: capabilities first, the request, then its outcome.
    Optional<ClusterVolumeRequest> done = askAndAwait(v, out, asked, from.isEmpty() ? v::requestCreate : v::ask,
        request, from.isPresent(), "");
    return done.isEmpty() ? exit : created(v, done.get(), out);
  }

  private int created(ClusterVolumes v, ClusterVolumeRequest r, PrintWriter out) {
    Optional<ClusterVolume> vol = v.volume(plugin, r.volumeId());
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("created", true);
    json.put("name", name);
    json.put("controller", r.controllerNodeId());
    json.put("volume", vol.map(x -> (Object) ClusterViews.volume(x, v.read()))
        .orElse(Map.of("plugin", plugin, "volume", r.volumeId())));
    say(out, "created volume " + r.volumeId() + " (" + vol.map(x -> x.capacityBytes() == 0 ? "size unknown"
        : ByteSizes.format(x.capacityBytes())).orElse("deregistered since") + ") of plugin " + plugin + " as "
        + name + vol.flatMap(ClusterVolume::source).map(f -> " from " + f).orElse("")
        + (r.controllerNodeId().isEmpty() ? "" : " through controller agent " + r.controllerNodeId())
        + vol.filter(x -> !x.accessibleTopology().isEmpty())
        .map(x -> ", accessible from " + x.accessibleTopology()).orElse(""), json);
    return ExitCodes.OK;
  }

  /** A create's source as found in etcd: what the request names, its size (0: unknown) and whether it is ready. */
  private record Source(VolumeSource source, long sizeBytes, boolean ready) {}

  /**
   * The source given, found: a volume to clone must be registered; a snapshot is found by id (recorded), else by the
   * name it was asked by (its done or pending snapshot request's id; a name not cut yet is refused, saying so).
   */
  private Optional<Source> source(ClusterVolumes v) throws VolumeStateException {
    if (cloneOf != null) {
      CsiIds.checkVolume("--clone-of", cloneOf);
      ClusterVolume vol = v.volume(plugin, cloneOf).orElseThrow(() -> new IllegalArgumentException("--clone-of: "
          + "volume " + cloneOf + " of plugin " + plugin + " is not registered (csi-agent cluster volume list)"));
      return Optional.of(new Source(VolumeSource.volume(cloneOf), vol.capacityBytes(), true));
    }
    if (fromSnapshot == null) {
      return Optional.empty();
    }
    ClusterVolumeSnapshot snap = ClusterVolumeSnapshots.find(v, plugin, "--from-snapshot", fromSnapshot);
    return Optional.of(new Source(VolumeSource.snapshot(snap.snapshotId()), snap.sizeBytes(), snap.readyToUse()));
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
}
