package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code csi-agent cluster volume register}: an existing disk, by id. */
@Command(name = "register", mixinStandardHelpOptions = true,
    description = "Registers an existing volume (a disk) by id: what claims check against.")
final class ClusterVolumeRegisterCommand extends ClusterVolumeSubcommand {
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
