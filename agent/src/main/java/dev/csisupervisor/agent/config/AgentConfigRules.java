package dev.csisupervisor.agent.config;

import dev.csisupervisor.common.Durations;
import dev.csisupervisor.tasks.process.RestartPolicy;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a valid agent config is, top-level field by field, in the order its problems are
 * reported; {@link PluginRules} says what a valid plugin entry is. Every problem is collected;
 * the config is built only if there is none.
 */
final class AgentConfigRules {
  /** Sampling /proc more often than this costs more than it tells. */
  static final Duration MIN_RESOURCE_INTERVAL = Duration.ofMillis(50);

  private final Path file;
  private final Problems problems;

  /**
   * @param file the config file (relative paths resolve against its directory)
   * @param earlier problems already found while reading it (unknown fields)
   */
  AgentConfigRules(Path file, List<String> earlier) {
    this.file = file;
    this.problems = new Problems(file.getParent() != null ? file.getParent() : Path.of("/"),
        earlier);
  }

  AgentConfig validate(RawConfig.Root raw) throws ConfigException {
    Path dataDir = problems.path("data_dir", blankAsMissing(raw.dataDir()))
        .required("the agent's data directory, e.g. /var/lib/csi-agent")
        .check(d -> !Files.exists(d) || Files.isDirectory(d),
            d -> d + " exists and is not a directory")
        .orNull();
    Path csiRoot = raw.csiRoot() != null ? problems.path("csi_root", raw.csiRoot()).orNull()
        : dataDir == null ? null : dataDir.resolve(AgentConfig.DEFAULT_CSI_ROOT);
    Path adminSocket = raw.adminSocket() != null
        ? problems.path("admin_socket", raw.adminSocket()).orNull()
        : dataDir == null ? null : dataDir.resolve(AgentConfig.DEFAULT_ADMIN_SOCKET);
    if (adminSocket != null) {
      checkSocketPath(raw.adminSocket() == null ? "data_dir" : "admin_socket",
          "the admin socket", adminSocket);
    }
    InetSocketAddress metrics = raw.metricsAddress() == null
        ? AgentConfig.defaultMetricsAddress()
        : problems.parsed("metrics_address", raw.metricsAddress(),
            AgentConfigRules::metricsAddress).orNull();
    boolean leaveRunning = raw.leaveRunning() != null && raw.leaveRunning();
    Duration grace = problems.duration("shutdown_grace", raw.shutdownGrace())
        .orElse(AgentConfig.DEFAULT_SHUTDOWN_GRACE);
    long logMaxBytes = problems.size("log_max_size", raw.logMaxSize())
        .check(n -> n >= 1024, n -> "must be at least 1KiB, got " + raw.logMaxSize())
        .orElse(AgentConfig.DEFAULT_LOG_MAX_BYTES);
    int logMaxFiles = problems.value("log_max_files", raw.logMaxFiles())
        .atLeast(0)
        .orElse(AgentConfig.DEFAULT_LOG_MAX_FILES);
    Path discoveryDir = problems.path("discovery_dir", raw.discoveryDir()).orNull();
    if (discoveryDir != null) {
      // The shortest socket it can hold is "<dir>/x".
      checkSocketPath("discovery_dir", "a socket in it, like", discoveryDir.resolve("x"));
    }
    Duration resourceInterval = isOff(raw.resourceInterval()) ? Duration.ZERO
        : problems.duration("resource_interval", raw.resourceInterval())
            .check(d -> d.isZero() || d.compareTo(MIN_RESOURCE_INTERVAL) >= 0,
                d -> "must be at least " + Durations.format(MIN_RESOURCE_INTERVAL) + " (or off), got "
                    + raw.resourceInterval())
            .orElse(AgentConfig.DEFAULT_RESOURCE_INTERVAL);
    int resourceHistory = problems.value("resource_history", raw.resourceHistory())
        .between(1, AgentConfig.MAX_RESOURCE_HISTORY, " samples")
        .orElse(AgentConfig.DEFAULT_RESOURCE_HISTORY);

    RawConfig.Volumes v = raw.volumes();
    Duration mountWait = problems.duration("volumes.mount_wait", v == null ? null : v.mountWait())
        .check(x -> !x.isZero(), x -> "must be more than 0, got " + v.mountWait())
        .orElse(AgentConfig.DEFAULT_VOLUME_MOUNT_WAIT);
    Duration healthInterval = v != null && isOff(v.healthInterval()) ? Duration.ZERO
        : problems.duration("volumes.health_interval", v == null ? null : v.healthInterval())
            .orElse(AgentConfig.DEFAULT_VOLUME_HEALTH_INTERVAL);
    // Not true or false: the YAML reading reports it ("volumes.verify_mounts: expected true or false").
    boolean verifyMounts = v == null || v.verifyMounts() == null || v.verifyMounts();

    RawConfig.Supervision d = raw.defaults();
    ProbeSettings defaultProbe = d == null ? ProbeSettings.DEFAULT
        : PluginRules.probe(problems, "defaults", d, ProbeSettings.DEFAULT);
    RestartPolicy defaultRestart = d == null || d.restart == null ? RestartPolicy.DEFAULT
        : PluginRules.restart(problems, "defaults.restart", d.restart, RestartPolicy.DEFAULT);

    List<PluginSpec> plugins = plugins(raw.plugins(), new PluginRules(problems, csiRoot,
        defaultProbe, defaultRestart, resourceInterval.isZero()));
    if (!problems.none()) {
      throw new ConfigException(file, problems.all());
    }
    try {
      return new AgentConfig(file, dataDir, csiRoot, adminSocket, metrics, leaveRunning, grace,
          logMaxBytes, logMaxFiles, plugins, discoveryDir, resourceInterval, resourceHistory,
          defaultProbe, mountWait, healthInterval, verifyMounts);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(file, e.getMessage());
    }
  }

  /** {@code plugins}: required (may be empty); each entry valid; no id twice. */
  private List<PluginSpec> plugins(List<RawConfig.Plugin> raw, PluginRules rules) {
    List<PluginSpec> plugins = new ArrayList<>();
    if (raw == null) {
      problems.add("plugins", "missing (a list of plugins, each with id, type and command or"
          + " socket; write 'plugins: []' for none)");
      return plugins;
    }
    Map<String, Integer> seen = new HashMap<>();
    for (int i = 0; i < raw.size(); i++) {
      RawConfig.Plugin p = raw.get(i);
      String at = "plugins[" + i + "]";
      if (p == null) {
        problems.add(at, "empty entry (each plugin needs id, type and command or socket)");
        continue;
      }
      Integer first = p.id == null ? null : seen.putIfAbsent(p.id, i);
      if (first != null) {
        problems.add(at + ".id", "duplicate id \"" + p.id + "\" (also plugins[" + first + "])");
      }
      PluginSpec spec = rules.plugin(at, p);
      // A duplicate's other problems are reported too; the entry itself is not used.
      if (spec != null && first == null) {
        plugins.add(spec);
      }
    }
    return plugins;
  }

  /** {@code metrics_address}: {@code host:port}, or {@code off}/{@code none}/empty for none. */
  private static InetSocketAddress metricsAddress(String value) {
    String v = value.strip();
    if (v.isEmpty() || v.equalsIgnoreCase("off") || v.equalsIgnoreCase("none")) {
      return null;
    }
    int colon = v.lastIndexOf(':');
    if (colon <= 0 || colon == v.length() - 1) {
      throw new IllegalArgumentException("\"" + value + "\" must be host:port (e.g."
          + " 127.0.0.1:9464), or off");
    }
    String host = v.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    int port;
    try {
      port = Integer.parseInt(v.substring(colon + 1));
    } catch (NumberFormatException e) {
      port = -1;
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port of \"" + value + "\" must be 0 to 65535");
    }
    // Unresolved: resolving happens when the endpoint binds, where a failure is reported.
    return InetSocketAddress.createUnresolved(host, port);
  }

  private void checkSocketPath(String field, String what, Path socket) {
    ConfigLoader.checkSocketPath(problems, field, what, socket);
  }

  private static String blankAsMissing(String s) {
    return s == null || s.isBlank() ? null : s;
  }

  private static boolean isOff(String s) {
    return s != null && s.strip().equalsIgnoreCase("off");
  }
}
