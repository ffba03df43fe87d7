package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
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

/**
 * {@code csi-agent cluster volume register}: an existing disk, by id. With a controller of the plugin id in the
 * catalog, a register request that its controller agent validates (ValidateVolumeCapabilities) before the record is
 * written; with none, or {@code --no-validate}, the record is written at once, marked not validated.
 */
@Command(name = "register", mixinStandardHelpOptions = true,
    description = "Registers an existing volume (a disk) by id: what claims check against. With a controller of the "
        + "plugin id in the cluster its controller agent validates it first (ValidateVolumeCapabilities with each "
        + "--access-mode); with none, or --no-validate, it is written at once, marked not validated.")
final class ClusterVolumeRegisterCommand extends ClusterVolumeSubcommand {
  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;
  @Option(names = "--capacity", paramLabel = "BYTES", description = "Its capacity in bytes (default 0: unknown).")
  long capacity;
  @Option(names = "--access-mode", paramLabel = "MODE", split = ",",
      description = "Access modes a claim may ask for, e.g. single-node-writer,multi-node-reader-only; at least one "
          + "when validated (default without validation: any).")
  List<String> modes = new ArrayList<>();
  @Option(names = "--block", description = "Validate it as a raw block volume instead of a file system.")
  boolean block;
  @Option(names = "--fs-type", paramLabel = "TYPE", defaultValue = "", description = "File system type to validate.")
  String fsType;
  @Option(names = "--topology", paramLabel = "KEY=VALUE[,...]",
      description = "A segment of the volume's accessible topology; repeat for more segments (default: everywhere).")
  List<String> topology = new ArrayList<>();
  @Option(names = "--parameter", paramLabel = "KEY=VALUE") Map<String, String> parameters = new TreeMap<>();
  @Option(names = "--context", paramLabel = "KEY=VALUE", description = "Its volume context (never secrets).")
  Map<String, String> context = new TreeMap<>();
  @Option(names = "--no-validate", description = "Write the record at once, without asking the controller agent to "
      + "validate it (marked not validated).")
  boolean noValidate;
  @Mixin ClusterVolumeRequests.RequestOptions request = new ClusterVolumeRequests.RequestOptions();

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    // Step 1: every argument, each named.
    Set<VolumeAccessMode> m = EnumSet.noneOf(VolumeAccessMode.class);
    for (String s : modes) {
      m.add(VolumeAccessMode.parse("--access-mode", s));
    }
    if (capacity < 0) {
      throw new IllegalArgumentException("--capacity must not be negative, got " + capacity);
    }
    if (block && !fsType.isEmpty()) {
      throw new IllegalArgumentException("--fs-type is for a file system, not with --block, got '" + fsType + "'");
    }
    List<Map<String, String>> segments = segments("--topology", topology);
    ClusterVolume vol = new ClusterVolume(plugin, volumeId, capacity, m, segments,
        ClusterVolumeRequests.keyValues("--parameter", parameters),
        ClusterVolumeRequests.keyValues("--context", context));
    Optional<java.nio.file.Path> secrets = request.secretsFile();
    request.waitFor();
    // Step 2: without validation (asked, or no controller to ask): the record at once, marked so.
    if (noValidate) {
      return direct(v, out, vol, "--no-validate");
    }
    if (v.controllersOf(plugin).isEmpty()) {
      return direct(v, out, vol, "no controller of plugin " + plugin + " in the cluster to validate it");
    }
    if (m.isEmpty()) {
      throw new IllegalArgumentException("--access-mode: at least one is needed to validate the volume "
          + "(ValidateVolumeCapabilities asks for each); or --no-validate");
    }
    Optional<ClusterVolume> there = v.volume(plugin, volumeId);
    if (there.isPresent() && there.get().withValidated(true).equals(vol)) {
      say(out, plugin + "/" + volumeId + " was registered already", Map.of("registered", true, "written", false,
          "plugin", plugin, "volume", volumeId, "validated", there.get().validated()));
      return ExitCodes.OK;
    }
    ClusterVolumeRequest asked = ClusterVolumeRequest.register(vol, block, fsType, secrets, Instant.now());
    // Step 3: a healthy controller, the request (etcd checks the volume is not registered), then its outcome.
    Optional<ClusterVolumeRequest> r = askAndAwait(v, out, asked, v::ask, request, true, " (nothing registered)");
    if (r.isEmpty()) {
      return exit;
    }
    boolean validated = v.volume(plugin, volumeId).map(ClusterVolume::validated).orElse(false);
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("registered", true);
    json.put("written", true);
    json.put("plugin", plugin);
    json.put("volume", volumeId);
    json.put("validated", validated);
    json.put("controller", r.get().controllerNodeId());
    say(out, "registered " + plugin + "/" + volumeId + (validated ? ", validated by controller agent "
        + r.get().controllerNodeId() : ", NOT VALIDATED: the plugin does not offer ValidateVolumeCapabilities "
        + "(UNIMPLEMENTED)"), json);
    return ExitCodes.OK;
  }

  /** Today's direct write, marked not validated, saying why. */
  private int direct(ClusterVolumes v, PrintWriter out, ClusterVolume vol, String why) throws VolumeStateException {
    boolean wrote = v.register(vol.withValidated(false));
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("registered", true);
    json.put("written", wrote);
    json.put("plugin", plugin);
    json.put("volume", volumeId);
    json.put("validated", false);
    json.put("why", why);
    say(out, wrote ? "registered " + plugin + "/" + volumeId + ", not validated (" + why + ")"
        : plugin + "/" + volumeId + " was registered already", json);
    return ExitCodes.OK;
  }
}
