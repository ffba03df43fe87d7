package dev.csisupervisor.agent.config;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Bounds;
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
 * @param discoveryDir   a directory whose unix sockets are supervised as external plugins, or
 *                       null for none
 * @param resourceInterval how often launched plugins' CPU and memory are sampled;
 *                       {@link Duration#ZERO} turns sampling (and limits) off
 * @param resourceHistory how many samples are kept per plugin
 * @param discoveryProbe how discovered plugins are probed (the config's {@code defaults})
 * @param volumeMountWait how long a volume mount waits for its node plugin to be ready
 * @param volumeHealthInterval how often mounted volumes' conditions are read ({@link Duration#ZERO}: never)
 * @param volumeVerifyMounts whether the volume manager checks its records against the mount table
 *                       ({@code /proc/self/mountinfo}): lost mounts are mounted again, unmounts verified, orphan
 *                       mounts found; false only for plugins that mount nothing (the mock plugin)
 */
public record AgentConfig(Path source, Path dataDir, Path csiRoot, Path adminSocket,
    InetSocketAddress metricsAddress, boolean leaveRunning, Duration shutdownGrace,
    long logMaxBytes, int logMaxFiles, List<PluginSpec> plugins, Path discoveryDir,
    Duration resourceInterval, int resourceHistory, ProbeSettings discoveryProbe,
    Duration volumeMountWait, Duration volumeHealthInterval, boolean volumeVerifyMounts) {
  /** The file in the data dir that records the launched plugin processes. */
  public static final String PROCESSES_FILE = "processes.json";


  public static final String DEFAULT_ADMIN_SOCKET = "agent.sock";
  public static final String DEFAULT_CSI_ROOT = "csi";
  public static final int DEFAULT_METRICS_PORT = 9464;
  public static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(10);
  public static final long DEFAULT_LOG_MAX_BYTES = 10L * 1024 * 1024;
  public static final int DEFAULT_LOG_MAX_FILES = 2;
  public static final Duration DEFAULT_RESOURCE_INTERVAL = Duration.ofSeconds(10);
  public static final int DEFAULT_RESOURCE_HISTORY = 60;
  public static final int MAX_RESOURCE_HISTORY = 100_000;
  public static final Duration DEFAULT_VOLUME_MOUNT_WAIT = Duration.ofMinutes(1);
  public static final Duration DEFAULT_VOLUME_HEALTH_INTERVAL = Duration.ofMinutes(1);

  public AgentConfig {
    requireNonNull(dataDir, "dataDir");
    requireNonNull(csiRoot, "csiRoot");
    requireNonNull(adminSocket, "adminSocket");
    requireNonNull(shutdownGrace, "shutdownGrace");
    requireNonNull(resourceInterval, "resourceInterval");
    requireNonNull(discoveryProbe, "discoveryProbe");
    Bounds.positive(requireNonNull(volumeMountWait, "volumeMountWait"), "volumeMountWait");
    Bounds.notNegative(requireNonNull(volumeHealthInterval, "volumeHealthInterval"), "volumeHealthInterval");
    plugins = List.copyOf(requireNonNull(plugins, "plugins"));
    for (var p : List.of(dataDir, csiRoot, adminSocket)) {
      if (!p.isAbsolute()) {
        throw new IllegalArgumentException("paths must be absolute, got " + p);
      }
    }
    Bounds.notNegative(shutdownGrace, "shutdownGrace");
    Bounds.atLeast(logMaxBytes, 1024, "logMaxBytes");
    Bounds.atLeast(logMaxFiles, 0, "logMaxFiles");
    if (discoveryDir != null && !discoveryDir.isAbsolute()) {
      throw new IllegalArgumentException("discoveryDir must be absolute, got " + discoveryDir);
    }
    Bounds.notNegative(resourceInterval, "resourceInterval");
    Bounds.between(resourceHistory, 1, MAX_RESOURCE_HISTORY, "resourceHistory");
    Set<String> ids = new HashSet<>();
    for (PluginSpec p : plugins) {
      if (!ids.add(p.id())) {
        throw new IllegalArgumentException("duplicate plugin id " + p.id());
      }
      if (p.limits().any() && resourceInterval.isZero()) {
        throw new IllegalArgumentException("plugin " + p.id() + " has resource limits, but"
            + " resource sampling is off (resourceInterval 0)");
      }
    }
  }

  /** With the default volume settings. */
  public AgentConfig(Path source, Path dataDir, Path csiRoot, Path adminSocket,
      InetSocketAddress metricsAddress, boolean leaveRunning, Duration shutdownGrace,
      long logMaxBytes, int logMaxFiles, List<PluginSpec> plugins, Path discoveryDir,
      Duration resourceInterval, int resourceHistory, ProbeSettings discoveryProbe) {
    this(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning, shutdownGrace, logMaxBytes,
        logMaxFiles, plugins, discoveryDir, resourceInterval, resourceHistory, discoveryProbe,
        DEFAULT_VOLUME_MOUNT_WAIT, DEFAULT_VOLUME_HEALTH_INTERVAL, true);
  }

  /** A config without discovery directory, sampling at the default interval. */
  public AgentConfig(Path source, Path dataDir, Path csiRoot, Path adminSocket,
      InetSocketAddress metricsAddress, boolean leaveRunning, Duration shutdownGrace,
      long logMaxBytes, int logMaxFiles, List<PluginSpec> plugins) {
    this(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning, shutdownGrace,
        logMaxBytes, logMaxFiles, plugins, null, DEFAULT_RESOURCE_INTERVAL,
        DEFAULT_RESOURCE_HISTORY, ProbeSettings.DEFAULT);
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
    return dataDir.resolve(PROCESSES_FILE);
  }

  /** {@code <dataDir>/plugins}: downloaded plugin artifacts, one directory per revision. */
  public Path pluginsDir() {
    return dataDir.resolve("plugins");
  }

  public Optional<Path> discovery() {
    return Optional.ofNullable(discoveryDir);
  }

  public AgentConfig withPlugins(List<PluginSpec> plugins) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins, discoveryDir, resourceInterval,
        resourceHistory, discoveryProbe, volumeMountWait, volumeHealthInterval, volumeVerifyMounts);
  }

  public AgentConfig withMetricsAddress(InetSocketAddress metricsAddress) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins, discoveryDir, resourceInterval,
        resourceHistory, discoveryProbe, volumeMountWait, volumeHealthInterval, volumeVerifyMounts);
  }

  public AgentConfig withDiscoveryDir(Path discoveryDir) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins, discoveryDir, resourceInterval,
        resourceHistory, discoveryProbe, volumeMountWait, volumeHealthInterval, volumeVerifyMounts);
  }

  public AgentConfig withResources(Duration interval, int history) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins, discoveryDir, interval, history,
        discoveryProbe, volumeMountWait, volumeHealthInterval, volumeVerifyMounts);
  }

  /** With the volume manager's mounts checked against the mount table, or not (a plugin that mounts nothing). */
  public AgentConfig withVolumeVerifyMounts(boolean verify) {
    return new AgentConfig(source, dataDir, csiRoot, adminSocket, metricsAddress, leaveRunning,
        shutdownGrace, logMaxBytes, logMaxFiles, plugins, discoveryDir, resourceInterval,
        resourceHistory, discoveryProbe, volumeMountWait, volumeHealthInterval, verify);
  }

  /**
   * Whether {@code other} differs from this in anything but its plugins (and source): such
   * changes need an agent restart; a reload applies only plugin changes.
   */
  public boolean sameAgentSettings(AgentConfig other) {
    return dataDir.equals(other.dataDir) && csiRoot.equals(other.csiRoot)
        && adminSocket.equals(other.adminSocket)
        && java.util.Objects.equals(metricsAddress, other.metricsAddress)
        && leaveRunning == other.leaveRunning && shutdownGrace.equals(other.shutdownGrace)
        && logMaxBytes == other.logMaxBytes && logMaxFiles == other.logMaxFiles
        && java.util.Objects.equals(discoveryDir, other.discoveryDir)
        && resourceInterval.equals(other.resourceInterval)
        && resourceHistory == other.resourceHistory
        && discoveryProbe.equals(other.discoveryProbe)
        && volumeMountWait.equals(other.volumeMountWait)
        && volumeHealthInterval.equals(other.volumeHealthInterval)
        && volumeVerifyMounts == other.volumeVerifyMounts;
  }
}
