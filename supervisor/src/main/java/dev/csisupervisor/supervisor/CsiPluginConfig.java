package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.CsiClientOptions;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.common.Bounds;
import dev.csisupervisor.common.Printable;
import dev.csisupervisor.common.SocketPaths;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * A task's CSI plugin block: what the hook needs to know to supervise it.
 *
 * @param pluginId       the plugin's id, used as its registry name and its directory name under
 *                       the CSI root; {@code [A-Za-z0-9._-]{1,128}}, never {@code .} or {@code ..}
 * @param type           controller, node or monolith (registered as both)
 * @param mountDir       where the plugin directory is mounted inside the task (absolute)
 * @param healthTimeout  how long the plugin may stay unhealthy (not yet ready after a start or
 *                       restart, or, once registered, failing or not-ready probes) before a
 *                       restart of the task is requested; {@link Duration#ZERO} never asks
 * @param probeInterval  the steady-state probe interval once the plugin is registered
 * @param probeTimeout   the deadline of each Probe
 * @param initialBackoff the first retry delay while waiting for ready (doubles each time)
 * @param maxBackoff     the cap of the retry delay while waiting for ready
 * @param externalSocket for a plugin started outside the task runner: its socket; the hook then
 *                       neither creates nor removes anything on disk. Null for task plugins.
 * @param fingerprintTimeout the deadline of each fingerprint call (GetPluginInfo, the capability
 *                       calls, NodeGetInfo), longer than a probe's: a cloud driver's NodeGetInfo
 *                       may query instance metadata
 */
public record CsiPluginConfig(
    String pluginId,
    PluginKind type,
    String mountDir,
    Duration healthTimeout,
    Duration probeInterval,
    Duration probeTimeout,
    Duration initialBackoff,
    Duration maxBackoff,
    Path externalSocket,
    Duration fingerprintTimeout) {

  public static final String DEFAULT_MOUNT_DIR = "/csi";
  public static final Duration DEFAULT_HEALTH_TIMEOUT = Duration.ofSeconds(30);
  public static final Duration DEFAULT_PROBE_INTERVAL = Duration.ofSeconds(30);
  public static final Duration DEFAULT_PROBE_TIMEOUT = Duration.ofSeconds(5);
  public static final Duration DEFAULT_FINGERPRINT_TIMEOUT = CsiClientOptions.DEFAULT_FINGERPRINT_TIMEOUT;
  public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofMillis(50);
  public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(5);

  public CsiPluginConfig {
    requireNonNull(pluginId, "pluginId");
    requireNonNull(type, "type");
    requireNonNull(mountDir, "mountDir");
    Validation.checkPluginId(pluginId);
    if (!mountDir.startsWith("/") || mountDir.contains("/../") || mountDir.endsWith("/..")) {
      throw new IllegalArgumentException(
          "mountDir must be an absolute path without '..', got " + Printable.quote(mountDir));
    }
    checkProbeTiming(healthTimeout, probeInterval, probeTimeout, initialBackoff, maxBackoff);
    Bounds.positive(fingerprintTimeout, "fingerprintTimeout");
    if (externalSocket != null) {
      if (!externalSocket.isAbsolute()) {
        throw new IllegalArgumentException(
            "externalSocket must be an absolute path, got " + externalSocket);
      }
      SocketPaths.checkLength("externalSocket", externalSocket);
    }
  }

  /** With the default fingerprint timeout. */
  public CsiPluginConfig(String pluginId, PluginKind type, String mountDir, Duration healthTimeout,
      Duration probeInterval, Duration probeTimeout, Duration initialBackoff, Duration maxBackoff,
      Path externalSocket) {
    this(pluginId, type, mountDir, healthTimeout, probeInterval, probeTimeout, initialBackoff,
        maxBackoff, externalSocket, DEFAULT_FINGERPRINT_TIMEOUT);
  }

  public static Builder builder(String pluginId, PluginKind type) {
    return new Builder(pluginId, type);
  }

  public Optional<Path> external() {
    return Optional.ofNullable(externalSocket);
  }

  /**
   * The same config with the plugin directory seen by the plugin at {@code mountDir} (registered as its
   * {@code container_mount_point}): a plugin that runs on the host sees it where the host has it.
   */
  public CsiPluginConfig withMountDir(String mountDir) {
    return new CsiPluginConfig(pluginId, type, mountDir, healthTimeout, probeInterval, probeTimeout, initialBackoff,
        maxBackoff, externalSocket, fingerprintTimeout);
  }

  /**
   * The rules for the probe timing components, with this record's messages, for a config that
   * holds them before a {@code CsiPluginConfig} is built (the agent's probe settings): the health
   * timeout not negative, the other durations positive, and the backoff's cap not below its start.
   *
   * @throws NullPointerException naming the component that is null
   * @throws IllegalArgumentException naming the component and its value
   */
  public static void checkProbeTiming(Duration healthTimeout, Duration probeInterval,
      Duration probeTimeout, Duration initialBackoff, Duration maxBackoff) {
    Bounds.notNegative(healthTimeout, "healthTimeout");
    Bounds.positive(probeInterval, "probeInterval");
    Bounds.positive(probeTimeout, "probeTimeout");
    Bounds.positive(initialBackoff, "initialBackoff");
    Bounds.positive(maxBackoff, "maxBackoff");
    Bounds.notBelow(maxBackoff, "maxBackoff", initialBackoff, "initialBackoff");
  }

  /** Builder with the defaults above. */
  public static final class Builder {
    private final String pluginId;
    private final PluginKind type;
    private String mountDir = DEFAULT_MOUNT_DIR;
    private Duration healthTimeout = DEFAULT_HEALTH_TIMEOUT;
    private Duration probeInterval = DEFAULT_PROBE_INTERVAL;
    private Duration probeTimeout = DEFAULT_PROBE_TIMEOUT;
    private Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;
    private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
    private Path externalSocket;
    private Duration fingerprintTimeout = DEFAULT_FINGERPRINT_TIMEOUT;

    private Builder(String pluginId, PluginKind type) {
      this.pluginId = pluginId;
      this.type = type;
    }

    public Builder mountDir(String v) { this.mountDir = v; return this; }
    public Builder healthTimeout(Duration v) { this.healthTimeout = v; return this; }
    public Builder probeInterval(Duration v) { this.probeInterval = v; return this; }
    public Builder probeTimeout(Duration v) { this.probeTimeout = v; return this; }
    public Builder initialBackoff(Duration v) { this.initialBackoff = v; return this; }
    public Builder maxBackoff(Duration v) { this.maxBackoff = v; return this; }
    public Builder externalSocket(Path v) { this.externalSocket = v; return this; }
    public Builder fingerprintTimeout(Duration v) { this.fingerprintTimeout = v; return this; }

    public CsiPluginConfig build() {
      return new CsiPluginConfig(pluginId, type, mountDir, healthTimeout, probeInterval,
          probeTimeout, initialBackoff, maxBackoff, externalSocket, fingerprintTimeout);
    }
  }
}
