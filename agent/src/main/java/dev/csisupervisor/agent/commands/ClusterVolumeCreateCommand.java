package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeAccessMode;
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
        + "idempotent) and registers it; waits for the outcome.")
final class ClusterVolumeCreateCommand extends ClusterVolumeSubcommand {
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
        segments("--topology", requisite), segments("--preferred-topology", preferred));
    ClusterVolumeRequest asked = ClusterVolumeRequest.create(plugin, name, wanted, request.secretsFile(),
        Instant.now());
    Duration wait = request.waitFor();
    // Step 2: someone to act on it.
    Optional<String> none = ClusterVolumeRequests.noController(v, plugin);
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
    Optional<ClusterVolumeRequest> r = ClusterVolumeRequests.await(v, ClusterVolumeRequest.Kind.CREATE, plugin, name,
        wait, x -> x.isEmpty() || x.get().state() != ClusterVolumeRequest.State.PENDING);
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
        return ClusterVolumeRequests.notDone(err, r.get(), request.waitSeconds, v);
      }
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
}
