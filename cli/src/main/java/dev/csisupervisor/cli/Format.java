package dev.csisupervisor.cli;

import dev.csisupervisor.common.ByteSizes;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.Timestamp;
import com.google.protobuf.util.JsonFormat;
import dev.csisupervisor.admin.v1.Fingerprint;
import dev.csisupervisor.admin.v1.Plugin;
import dev.csisupervisor.admin.v1.PluginEvent;
import dev.csisupervisor.admin.v1.PluginType;
import dev.csisupervisor.admin.v1.ResourceSample;
import dev.csisupervisor.admin.v1.ResourceUsage;
import dev.csisupervisor.admin.v1.TaskStatus;
import java.io.PrintWriter;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** How the CLI shows plugins and events. Stateless. */
public final class Format {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneId.systemDefault());
  /** Made on first use: only --json output needs protobuf's JSON printer. */
  private static final class Printers {
    static final JsonFormat.Printer JSON = JsonFormat.printer()
        .preservingProtoFieldNames()
        .alwaysPrintFieldsWithNoPresence()
        .omittingInsignificantWhitespace();
    static final JsonFormat.Printer PRETTY = JsonFormat.printer()
        .preservingProtoFieldNames()
        .alwaysPrintFieldsWithNoPresence();
  }

  private Format() {}

  public static String type(PluginType t) {
    return switch (t) {
      case CSI_CONTROLLER -> "controller";
      case CSI_NODE -> "node";
      default -> t.name();
    };
  }

  /** A time as tables show it: local, to the second. */
  public static String time(Instant t) {
    return TIME.format(t);
  }

  /** A time the agent sent. */
  public static Instant instant(Timestamp t) {
    return Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
  }

  static String health(Plugin p) {
    String h = p.getHealth().getHealthy() ? "healthy"
        : "unhealthy" + (p.getHealth().getMessage().isEmpty() ? ""
            : ": " + p.getHealth().getMessage());
    return p.getRestored() ? h + " (restored)" : h;
  }

  /** The {@code plugins} table. */
  public static void table(PrintWriter out, List<Plugin> plugins) {
    List<String[]> rows = new ArrayList<>();
    rows.add(new String[] {"TYPE", "NAME", "VERSION", "ALLOC", "HEALTH", "SINCE", "SOCKET"});
    for (Plugin p : plugins) {
      rows.add(new String[] {type(p.getType()), p.getName(), p.getVersion(), p.getAllocId(),
          truncate(health(p), 48), time(instant(p.getHealth().getSince())),
          p.getSocketPath()});
    }
    rows(out, rows);
    if (plugins.isEmpty()) {
      out.println("(no plugins registered)");
    }
  }

  /** Rows as columns padded to their widest cell (the first row is the header). */
  static void rows(PrintWriter out, List<String[]> rows) {
    int[] width = new int[rows.get(0).length];
    for (String[] r : rows) {
      for (int i = 0; i < r.length; i++) {
        width[i] = Math.max(width[i], r[i].length());
      }
    }
    for (String[] r : rows) {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < r.length; i++) {
        sb.append(i == r.length - 1 ? r[i] : pad(r[i], width[i] + 2));
      }
      out.println(sb.toString().stripTrailing());
    }
  }

  /** Everything about one plugin. */
  public static void details(PrintWriter out, Plugin p) {
    Fingerprint f = p.getFingerprint();
    line(out, "type", type(p.getType()));
    line(out, "name", p.getName());
    line(out, "version", p.getVersion());
    line(out, "alloc", p.getAllocId());
    line(out, "socket", p.getSocketPath());
    line(out, "health", health(p));
    line(out, "since", time(instant(p.getHealth().getSince())));
    line(out, "restored", p.getRestored() ? "yes (not yet confirmed by its supervisor)" : "no");
    line(out, "options", map(p.getOptionsMap()));
    out.println("fingerprint:");
    line(out, "  name", f.getName());
    line(out, "  vendor version", f.getVendorVersion());
    line(out, "  manifest", map(f.getManifestMap()));
    line(out, "  plugin caps", String.join(", ", f.getPluginCapabilitiesList()));
    line(out, "  controller caps", String.join(", ", f.getControllerCapabilitiesList()));
    line(out, "  node caps", String.join(", ", f.getNodeCapabilitiesList()));
    line(out, "  node id", f.getNodeId());
    line(out, "  max volumes", f.getMaxVolumesPerNode() == 0 ? "(not reported)"
        : Long.toString(f.getMaxVolumesPerNode()));
    line(out, "  topology", map(f.getAccessibleTopologyMap()));
  }

  /** The agent's task of a plugin: process, artifact revision, resources. */
  public static void task(PrintWriter out, TaskStatus t) {
    out.println("task:");
    line(out, "  process", t.getProcessState() + (t.getPid() == 0 ? "" : " pid " + t.getPid())
        + (t.getReattached() ? " (re-attached)" : "")
        + (t.getDiscovered() ? " (discovered socket)" : ""));
    line(out, "  restarts", Integer.toString(t.getRestarts()));
    if (!t.getLastFailure().isEmpty()) {
      line(out, "  last failure", time(instant(t.getLastFailureTime())) + ": "
          + t.getLastFailure());
    }
    if (!t.getRevision().isEmpty() || !t.getArtifactError().isEmpty()) {
      line(out, "  revision", t.getRevision());
    }
    if (!t.getArtifactError().isEmpty()) {
      line(out, "  artifact error", t.getArtifactError());
    }
    if (!t.getLogFile().isEmpty()) {
      line(out, "  log", t.getLogFile());
    }
    if (!t.hasResources()) {
      return;
    }
    ResourceUsage r = t.getResources();
    line(out, "  cpu", r.hasLatest() ? cpu(r.getLatest().getCpuPercent()) : "-");
    line(out, "  memory", r.hasLatest() ? bytes(r.getLatest().getMemoryBytes()) : "-");
    if (r.getHistoryCount() > 0) {
      double maxCpu = -1;
      double sumCpu = 0;
      int nCpu = 0;
      long maxMem = 0;
      for (ResourceSample s : r.getHistoryList()) {
        if (s.getCpuPercent() >= 0) {
          maxCpu = Math.max(maxCpu, s.getCpuPercent());
          sumCpu += s.getCpuPercent();
          nCpu++;
        }
        maxMem = Math.max(maxMem, s.getMemoryBytes());
      }
      Instant from = instant(r.getHistory(0).getTime());
      line(out, "  history", r.getHistoryCount() + " samples since " + time(from) + ": cpu avg "
          + (nCpu == 0 ? "-" : cpu(sumCpu / nCpu)) + " max " + (nCpu == 0 ? "-" : cpu(maxCpu))
          + ", memory max " + bytes(maxMem));
    }
    List<String> limits = new ArrayList<>();
    if (r.getMaxMemoryBytes() > 0) {
      limits.add("memory " + bytes(r.getMaxMemoryBytes()));
    }
    if (r.getMaxCpuPercent() > 0) {
      limits.add("cpu " + cpu(r.getMaxCpuPercent()));
    }
    if (!limits.isEmpty()) {
      line(out, "  limits", String.join(", ", limits) + " (" + r.getLimitRestarts()
          + " restart(s) for exceeding them)");
    }
  }

  /** {@code 12.5%}; {@code -} when unknown (negative). */
  public static String cpu(double percent) {
    return percent < 0 ? "-" : String.format(Locale.ROOT, "%.1f%%", percent);
  }

  /** {@code 812 B}, {@code 1.5 KiB}, {@code 48.0 MiB}, {@code 2.0 GiB}. */
  public static String bytes(long b) {
    return ByteSizes.format(b);
  }

  /** One event as a line. */
  public static String event(PluginEvent e) {
    Plugin p = e.getPlugin();
    return time(instant(e.getTime())) + "  " + pad(type(e.getType()), 10)
        + " seq=" + pad(Long.toString(e.getSequence()), 4) + " " + pad(e.getKind().name(), 12)
        + " " + p.getName() + " alloc=" + p.getAllocId() + " version=" + p.getVersion()
        + " health=" + health(p);
  }

  /**
   * {@code m} as JSON with the config's vocabulary: a plugin {@code type} is {@code controller}
   * or {@code node} (the admin API's enum names CSI_CONTROLLER / CSI_NODE are wire names only). What every
   * {@code --json} prints, and the operator page's {@code /api/v1/...} serves.
   */
  public static String json(MessageOrBuilder m, boolean pretty) {
    String raw;
    try {
      raw = (pretty ? Printers.PRETTY : Printers.JSON).print(m);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException(e);
    }
    try {
      com.fasterxml.jackson.databind.JsonNode tree = Jackson.MAPPER.readTree(raw);
      renameTypes(tree);
      return pretty ? Jackson.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(tree)
          : Jackson.MAPPER.writeValueAsString(tree);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Made on first use: only --json output needs Jackson. */
  private static final class Jackson {
    static final com.fasterxml.jackson.databind.ObjectMapper MAPPER =
        new com.fasterxml.jackson.databind.ObjectMapper();
  }

  private static void renameTypes(com.fasterxml.jackson.databind.JsonNode node) {
    if (node instanceof com.fasterxml.jackson.databind.node.ObjectNode o) {
      com.fasterxml.jackson.databind.JsonNode t = o.get("type");
      if (t != null && t.isTextual()) {
        switch (t.asText()) {
          case "CSI_CONTROLLER" -> o.put("type", "controller");
          case "CSI_NODE" -> o.put("type", "node");
          case "PLUGIN_TYPE_UNSPECIFIED" -> o.put("type", "");
          default -> { }
        }
      }
      o.elements().forEachRemaining(Format::renameTypes);
    } else if (node != null && node.isArray()) {
      node.elements().forEachRemaining(Format::renameTypes);
    }
  }

  private static void line(PrintWriter out, String key, String value) {
    out.println(pad(key + ":", 20) + (value.isEmpty() ? "-" : value));
  }

  private static String map(Map<String, String> m) {
    List<String> parts = new ArrayList<>();
    new java.util.TreeMap<>(m).forEach((k, v) -> parts.add(k + "=" + v));
    return String.join(", ", parts);
  }

  /** {@code s} left-aligned in a column {@code width} wide (at least one space after it). */
  public static String pad(String s, int width) {
    return s.length() >= width ? s + " " : s + " ".repeat(width - s.length());
  }

  private static String truncate(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max - 1) + "…";
  }
}
