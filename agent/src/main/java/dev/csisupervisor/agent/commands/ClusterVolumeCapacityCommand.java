package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.CapacityReading;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.common.CsiIds;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code csi-agent cluster volume capacity PLUGIN}: GetCapacity per topology segment and parameter set in use, as the
 * plugin id's controller agent last read it ({@code capacity/<plugin>/<segment>}). Refused when no healthy controller
 * of the plugin id offers GET_CAPACITY, naming what each has.
 */
@Command(name = "capacity", mixinStandardHelpOptions = true,
    description = "The room a plugin's controller reports (GetCapacity), per topology segment of its node plugins and "
        + "per parameter set of its volumes, as its controller agent last read it (every "
        + "cluster.controller_check_interval, and after creates and deletes).")
final class ClusterVolumeCapacityCommand extends ClusterVolumeSubcommand {
  static final String GET_CAPACITY = "GET_CAPACITY";

  @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;

  @Override
  int run(ClusterVolumes v, PrintWriter out) {
    CsiIds.checkPlugin("PLUGIN", plugin);
    Optional<String> refused = ClusterVolumeRequests.noControllerOffering(v, plugin, java.util.Set.of(GET_CAPACITY));
    if (refused.isPresent()) {
      spec.commandLine().getErr().println("csi-agent: " + refused.get());
      return ExitCodes.FAILURE;
    }
    List<CapacityReading> readings = v.capacity(plugin);
    if (etcd.json) {
      List<Object> segments = new ArrayList<>();
      for (CapacityReading r : readings) {
        List<Object> entries = new ArrayList<>();
        for (CapacityReading.Entry e : r.entries()) {
          Map<String, Object> m = new LinkedHashMap<>();
          m.put("parameters", e.parameters());
          m.put("available_bytes", e.availableBytes());
          m.put("maximum_volume_size", e.maximumVolumeSize().isPresent() ? e.maximumVolumeSize().getAsLong() : null);
          entries.add(m);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("segment", r.segmentKey());
        m.put("topology", r.topology());
        m.put("read_at", r.since().toString());
        m.put("entries", entries);
        segments.add(m);
      }
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("plugin", plugin);
      m.put("segments", segments);
      ClusterCommand.printJson(out, m);
      return ExitCodes.OK;
    }
    if (readings.isEmpty()) {
      out.println("no capacity of plugin " + plugin + " read yet (its controller agent reads it every "
          + "cluster.controller_check_interval)");
      return ExitCodes.OK;
    }
    out.printf("%-40s %-30s %16s %16s %s%n", "SEGMENT", "PARAMETERS", "AVAILABLE", "MAX VOLUME", "READ AT");
    for (CapacityReading r : readings) {
      String segment = r.topology().isEmpty() ? "(whole plugin)" : r.topology().toString();
      for (CapacityReading.Entry e : r.entries()) {
        out.printf("%-40s %-30s %16d %16s %s%n", segment, e.parameters().isEmpty() ? "(none)" : e.parameters(),
            e.availableBytes(), e.maximumVolumeSize().isPresent() ? e.maximumVolumeSize().getAsLong() : "-",
            r.since());
      }
    }
    return ExitCodes.OK;
  }
}
