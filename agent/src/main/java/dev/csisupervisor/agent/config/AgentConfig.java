package dev.csisupervisor.agent.config;

import static java.util.Objects.requireNonNull;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The agent's validated configuration. Load one with {@link ConfigLoader#load(Path)}, or build one
 * in code (the demo does).
 *
 * @param source         the file it was read from, or null when built in code
 * @param dataDir        the agent's data directory: state file, process records, logs
 * @param csiRoot        root of the launched plugins' socket directories
 * @param adminSocket    the admin API's unix socket
 * @param metricsAddress where the Prometheus endpoint listens, or null for no metrics endpoint
 * @param leaveRunning   on shutdown, leave launched plugins running (the next start re-attaches)
 * @param shutdownGrace  how long a stopped plugin process gets between SIGTERM and SIGKILL
 * @param logMaxBytes    the size at which a plugin's log file is rotated
 * @param logMaxFiles    how many rotated log files are kept per plugin (besides the current one)
 * @param plugins        the plugins, ids unique
 */
public record AgentConfig(Path source, Path dataDir, Path csiRoot, Path adminSocket,
    InetSocketAddress metricsAddress, boolean leaveRunning, Duration shutdownGrace,
    long logMaxBytes, int logMaxFiles, List<PluginSpec> plugins) {

  public static final String DEFAULT_ADMIN_SOCKET = "agent.sock";
  public static final String DEFAULT_CSI_ROOT = "csi";
  public static final int DEFAULT_METRICS_PORT = 9464;
  public static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(10);
  public static final long DEFAULT_LOG_MAX_BYTES = 10L * 1024 * 1024;
  public static final int DEFAULT_LOG_MAX_FILES = 2;

  public AgentConfig {
    requireNonNull(dataDir, "dataDir");
    requireNonNull(csiRoot, "csiRoot");
    requireNonNull(adminSocket, "adminSocket");
    requireNonNull(shutdownGrace, "shutdownGrace");
    plugins = List.copyOf(requireNonNull(plugins, "plugins"));
    for (var p : List.of(dataDir, csiRoot, adminSocket)) {
      if (!p.isAbsolute()) {
        throw new IllegalArgumentException("paths must be absolute, got " + p);
      }
    }
    if (shutdownGrace.isNegative()) {
      throw new IllegalArgumentException("shutdownGrace must not be negative, got " + shutdownGrace);
    }
    if (logMaxBytes < 1024) {
      throw new IllegalArgumentException("logMaxBytes must be >= 1024, got " + logMaxBytes);
    }
    if (logMaxFiles < 0) {
      throw new IllegalArgumentException("logMaxFiles must be >= 0, got " + logMaxFiles);
    }
    Set<String> ids = new HashSet<>();
    for (PluginSpec p : plugins) {
      if (!ids.add(p.id())) {
        throw new IllegalArgumentException("duplicate plugin id " + p.id());
      }
    }
  }

  /** The default metrics address: loopback only. */
  public static InetSocketAddress defaultMetricsAddress() {
    return new InetSocketAddress("127.0.0.1", DEFAULT_METRICS_PORT);
  }

  public Optional<InetSocketAddress> metrics() {
    return Optional.ofNullable(metricsAddress);
  }

  public Optional<PluginSpec> plugin(String id) {
    return plugins.stream().filter(p -> p.id().equals(id)).findFirst();
  }

  /** {@code <dataDir>/logs}: one log file (plus rotated ones) per launched plugin. */
  public Path logDir() {
    return dataDir.resolve("logs");
  }

  /** {@code <dataDir>/processes.json}: the launched processes, for re-attaching after a restart. */
  public Path processesFile() {
    return dataDir.resolve("processes.json");
  }

  public AgentConfig withPlugins(List<PluginSpec> plugins) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins);
  }

  public AgentConfig withMetricsAddress(InetSocketAddress metricsAddress) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins);
  }
}
