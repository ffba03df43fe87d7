package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.cli.Format;
import dev.csisupervisor.cli.TypeOption;
import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.agent.views.JsonText;
import dev.csisupervisor.agent.config.ConfigException;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.CatalogKeys;
import dev.csisupervisor.catalog.ClusterRead;
import dev.csisupervisor.catalog.ClusterSnapshot;
import dev.csisupervisor.catalog.ClusterView;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.EtcdOptions;
import dev.csisupervisor.catalog.NodeEntry;
import dev.csisupervisor.catalog.PluginSummary;
import dev.csisupervisor.catalog.ViewFreshness;
import dev.csisupervisor.registry.PluginType;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code csi-agent cluster plugins|plugin|nodes}: the cluster catalog read straight from etcd, so it works from
 * any machine, with or without a local agent.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
    description = "The cluster catalog in etcd: every node's plugins and their health.",
    subcommands = {ClusterCommand.Plugins.class, ClusterCommand.Plugin.class, ClusterCommand.Nodes.class,
        ClusterVolumeCommand.class})
final class ClusterCommand implements Runnable {
  static final String ENV = "CSI_AGENT_ETCD_ENDPOINTS";

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(), "Missing command: plugins, plugin NAME, nodes or volume");
  }

  /** Where etcd is: {@code --endpoints}, or the {@code cluster:} section of {@code --config}. */
  static final class EtcdCliOptions {
    @Option(names = "--endpoints", paramLabel = "URLS",
        description = "etcd client URLs, comma-separated (default: $" + ENV + ").")
    String endpoints;

    @Option(names = "--config", paramLabel = "FILE",
        description = "Take endpoints, prefix, TLS and user from this agent config's cluster: section.")
    Path config;

    @Option(names = "--prefix", paramLabel = "PREFIX",
        description = "The catalog's key prefix (default: the config's, else " + CatalogKeys.DEFAULT_PREFIX + ").")
    String prefix;

    @Option(names = "--json", description = "JSON instead of a table.")
    boolean json;

    /** Where etcd is and the prefix, as the options say. */
    record Target(EtcdOptions etcd, String prefix) {}

    Target target(CommandLine cmd) {
      if (endpoints != null && config != null) {
        throw new CommandLine.ParameterException(cmd, "Give either --endpoints or --config, not both");
      }
      EtcdOptions etcd;
      String p = prefix;
      try {
        if (config != null) {
          Optional<ClusterConfig> c = ClusterConfig.load(config);
          if (c.isEmpty()) {
            throw new CommandLine.ParameterException(cmd, config + " has no cluster: section (give --endpoints)");
          }
          etcd = c.get().etcd();
          p = p == null ? c.get().prefix() : p;
        } else {
          String e = endpoints != null ? endpoints : System.getenv(ENV);
          if (e == null) {
            throw new CommandLine.ParameterException(cmd,
                "Which etcd? Give --endpoints URLS or --config FILE (or set " + ENV + ")");
          }
          etcd = EtcdOptions.of(e);
        }
        p = p == null ? CatalogKeys.DEFAULT_PREFIX : p;
        CatalogKeys.checkPrefix(p);
        return new Target(etcd, p);
      } catch (ConfigException e) {
        throw new CommandLine.ParameterException(cmd, e.getMessage());
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(cmd, "--" + (e.getMessage().startsWith("prefix") ? "" : "endpoints: ")
            + e.getMessage());
      }
    }

    ClusterRead read(CommandLine cmd) {
      Target t = target(cmd);
      return ClusterView.readAllowingStale(t.etcd(), t.prefix());
    }
  }

  /**
   * A cluster query: reads the catalog once from etcd ({@link EtcdCliOptions}) and shows it after a freshness
   * line (the revision, the member read, and STALE when etcd had no quorum and one member's own copy was read);
   * with {@code --json} the same as a {@code freshness} object. An unreadable etcd is one
   * {@code csi-agent: ...} line and exit code 1.
   */
  abstract static class CatalogQuery implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Mixin
    EtcdCliOptions etcd = new EtcdCliOptions();

    /** How current the read being shown is. */
    ViewFreshness freshness;

    /** Shows {@code s} on {@code out}; returns the exit code. */
    abstract int show(ClusterSnapshot s, PrintWriter out);

    /** {@code m} (a JSON object) with the read's {@code freshness} added. */
    Map<String, Object> withFreshness(Map<String, Object> m) {
      Map<String, Object> out = new LinkedHashMap<>(m);
      out.put("freshness", ClusterViews.freshness(freshness));
      return out;
    }

    @Override
    public final Integer call() {
      CommandLine cmd = spec.commandLine();
      ClusterRead r;
      try {
        r = etcd.read(cmd);
      } catch (EtcdException e) {
        cmd.getErr().println("csi-agent: cannot read the cluster catalog: " + e.getMessage());
        return ExitCodes.FAILURE;
      }
      freshness = r.freshness();
      if (!etcd.json) {
        cmd.getOut().println(freshnessLine(freshness, java.time.Instant.now()));
      }
      return show(r.snapshot(), cmd.getOut());
    }
  }

  static void printJson(PrintWriter out, Object o) {
    out.println(JsonText.write(o));
  }

  /**
   * {@code revision 42 from http://10.0.0.1:2379, confirmed 0s ago}, or for one member's own copy
   * {@code STALE: revision 40 from http://10.0.0.3:2379 (that member's own copy: etcd has no quorum: ...)}.
   */
  static String freshnessLine(ViewFreshness f, java.time.Instant now) {
    if (!f.stale()) {
      return "revision " + f.revision() + " from " + f.endpoint() + ", confirmed " + f.age(now).toSeconds() + "s ago";
    }
    return "STALE: revision " + f.revision() + " from " + f.endpoint() + " ("
        + (f.lastConfirmed() == null ? "that member's own copy, not confirmed by a quorum"
            : "last confirmed " + f.age(now).toSeconds() + "s ago, at " + Format.time(f.lastConfirmed()))
        + (f.lastError().isEmpty() ? "" : ": " + f.lastError()) + ")";
  }

  static String unhealthy(PluginSummary s) {
    List<String> out = new ArrayList<>();
    for (CatalogEntry e : s.entries()) {
      if (!e.healthy()) {
        out.add(e.nodeId() + " (" + e.type().label() + ") since "
            + Format.time(e.healthSince()));
      }
    }
    return out.isEmpty() ? "-" : String.join(", ", out);
  }

  private static List<String> names(Object o) {
    List<String> out = new ArrayList<>();
    if (o instanceof List<?> l) {
      l.forEach(x -> out.add(String.valueOf(x)));
    }
    return out;
  }

  /** {@code --type controller|node} as {@link TypeOption} reads it, checked before etcd is read. */
  static final class TypeConverter implements CommandLine.ITypeConverter<PluginType> {
    @Override
    public PluginType convert(String value) {
      return new TypeOption().convert(value) == dev.csisupervisor.admin.v1.PluginType.CSI_CONTROLLER
          ? PluginType.CSI_CONTROLLER : PluginType.CSI_NODE;
    }
  }

  /** {@code cluster plugins [--type T] [--json]}. */
  @Command(name = "plugins", mixinStandardHelpOptions = true,
      description = "Every plugin name in the cluster: controllers and nodes healthy / expected.")
  static final class Plugins extends CatalogQuery {
    @Option(names = "--type", paramLabel = "controller|node", converter = TypeConverter.class,
        description = "Only names that have this type.")
    PluginType type;

    @Override
    int show(ClusterSnapshot s, PrintWriter out) {
      List<PluginSummary> plugins = s.plugins(type);
      if (etcd.json) {
        printJson(out, ClusterViews.plugins(s, freshness, type, false));
        return ExitCodes.OK;
      }
      if (plugins.isEmpty()) {
        out.println("no plugins in the cluster catalog (" + s.nodes().size() + " node(s))");
        return ExitCodes.OK;
      }
      out.println(Format.pad("NAME", 20) + Format.pad("CONTROLLERS", 13) + Format.pad("NODES", 9) + "UNHEALTHY");
      for (PluginSummary p : plugins) {
        out.println(Format.pad(p.name(), 20) + Format.pad(p.controllersHealthy() + "/" + p.controllersExpected(), 13)
            + Format.pad(p.nodesHealthy() + "/" + p.nodesExpected(), 9) + unhealthy(p));
      }
      return ExitCodes.OK;
    }
  }

  /** {@code cluster plugin NAME [--json]}. */
  @Command(name = "plugin", mixinStandardHelpOptions = true,
      description = "One plugin across the cluster: its counts and every node's instances, health and since when.")
  static final class Plugin extends CatalogQuery {
    @Parameters(index = "0", paramLabel = "NAME", description = "The plugin name.")
    String name;

    @Override
    int show(ClusterSnapshot s, PrintWriter out) {
      Optional<PluginSummary> p = s.plugin(name);
      if (p.isEmpty()) {
        spec.commandLine().getErr().println("csi-agent: plugin '" + name + "' is not in the cluster catalog");
        return ExitCodes.FAILURE;
      }
      PluginSummary sum = p.get();
      if (etcd.json) {
        printJson(out, withFreshness(ClusterViews.summary(sum, true)));
        return ExitCodes.OK;
      }
      out.println(sum.name() + ": controllers healthy " + sum.controllersHealthy() + "/" + sum.controllersExpected()
          + ", nodes healthy " + sum.nodesHealthy() + "/" + sum.nodesExpected());
      out.println(Format.pad("NODE", 20) + Format.pad("TYPE", 12) + Format.pad("ALLOC", 24) + Format.pad("VERSION", 10)
          + Format.pad("HEALTH", 11) + Format.pad("SINCE", 21) + "MESSAGE");
      for (CatalogEntry e : sum.entries()) {
        out.println(Format.pad(e.nodeId(), 20) + Format.pad(e.type().label(), 12)
            + Format.pad(e.allocId(), 24) + Format.pad(e.version().isEmpty() ? "-" : e.version(), 10)
            + Format.pad(e.healthy() ? "healthy" : "unhealthy", 11) + Format.pad(Format.time(e.healthSince()), 21)
            + (e.healthMessage().isEmpty() ? "-" : e.healthMessage()));
      }
      return ExitCodes.OK;
    }
  }

  /** {@code cluster nodes [--json]}. */
  @Command(name = "nodes", mixinStandardHelpOptions = true,
      description = "Every node in the catalog: its plugins, how many are healthy, since when its agent runs.")
  static final class Nodes extends CatalogQuery {
    @Override
    int show(ClusterSnapshot s, PrintWriter out) {
      List<Map<String, Object>> rows = new ArrayList<>();
      for (String id : s.nodeIds()) {
        NodeEntry n = s.nodes().get(id);
        List<CatalogEntry> plugins = s.nodePlugins(id);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("node", id);
        m.put("hostname", n == null ? "" : n.hostname());
        m.put("started_at", n == null ? "" : n.startedAt().toString());
        m.put("plugins", plugins.size());
        m.put("healthy", plugins.stream().filter(CatalogEntry::healthy).count());
        m.put("names", plugins.stream().map(e -> e.name() + "(" + (e.type() == PluginType.CSI_CONTROLLER ? "c" : "n") + ")").toList());
        rows.add(m);
      }
      if (etcd.json) {
        printJson(out, withFreshness(Map.of("revision", s.revision(), "nodes", rows)));
        return ExitCodes.OK;
      }
      if (rows.isEmpty()) {
        out.println("no nodes in the cluster catalog");
        return ExitCodes.OK;
      }
      out.println(Format.pad("NODE", 20) + Format.pad("HOST", 20) + Format.pad("HEALTHY", 9) + Format.pad("UP SINCE", 21) + "PLUGINS");
      for (Map<String, Object> m : rows) {
        String since = m.get("started_at").toString();
        out.println(Format.pad(m.get("node").toString(), 20) + Format.pad(m.get("hostname").toString(), 20)
            + Format.pad(m.get("healthy") + "/" + m.get("plugins"), 9)
            + Format.pad(since.isEmpty() ? "(no node key)" : Format.time(java.time.Instant.parse(since)), 21)
            + String.join(" ", names(m.get("names"))));
      }
      return ExitCodes.OK;
    }
  }
}
