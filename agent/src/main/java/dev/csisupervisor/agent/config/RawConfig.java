package dev.csisupervisor.agent.config;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/**
 * The config file exactly as written: every field optional, nothing validated. Jackson maps the
 * YAML onto these (unknown fields are an error), and nothing else writes them; {@link ConfigLoader}
 * then checks every field and builds the validated {@link AgentConfig}. Durations and sizes stay
 * strings here so that their errors can name the field.
 */
final class RawConfig {
  private RawConfig() {}

  record Root(
      @JsonProperty("data_dir") String dataDir,
      @JsonProperty("csi_root") String csiRoot,
      @JsonProperty("admin_socket") String adminSocket,
      @JsonProperty("metrics_address") String metricsAddress,
      @JsonProperty("leave_running") Boolean leaveRunning,
      @JsonProperty("shutdown_grace") String shutdownGrace,
      @JsonProperty("log_max_size") String logMaxSize,
      @JsonProperty("log_max_files") Integer logMaxFiles,
      @JsonProperty("defaults") Supervision defaults,
      @JsonProperty("plugins") List<Plugin> plugins,
      @JsonProperty("discovery_dir") String discoveryDir,
      @JsonProperty("resource_interval") String resourceInterval,
      @JsonProperty("resource_history") Integer resourceHistory,
      @JsonProperty("volumes") Volumes volumes,
      // Validated by ClusterConfig (issue 13); kept as a tree here.
      @JsonProperty("cluster") com.fasterxml.jackson.databind.JsonNode cluster,
      // Validated by LogSettings (with its lines and columns); kept as a tree here.
      @JsonProperty("log") com.fasterxml.jackson.databind.JsonNode log) {}

  /**
   * The probe and restart settings: the same keys in {@code defaults:} and in each plugin entry,
   * where each one set overrides the default. Fields, not a record, so that {@link Plugin} adds its
   * own keys to these instead of declaring them again.
   */
  static class Supervision {
    @JsonProperty("health_timeout") String healthTimeout;
    @JsonProperty("probe_interval") String probeInterval;
    @JsonProperty("probe_timeout") String probeTimeout;
    @JsonProperty("initial_backoff") String initialBackoff;
    @JsonProperty("max_backoff") String maxBackoff;
    @JsonProperty("restart") Restart restart;
  }

  /** {@code volumes:}: the volume manager's settings. */
  record Volumes(
      @JsonProperty("mount_wait") String mountWait,
      @JsonProperty("health_interval") String healthInterval,
      @JsonProperty("verify_mounts") Boolean verifyMounts) {}

  record Restart(
      @JsonProperty("attempts") Integer attempts,
      @JsonProperty("interval") String interval,
      @JsonProperty("delay") String delay,
      @JsonProperty("mode") String mode) {}

  /** A {@code plugins[i]} entry: its own keys and the {@link Supervision} ones. */
  static final class Plugin extends Supervision {
    @JsonProperty("id") String id;
    @JsonProperty("type") String type;
    @JsonProperty("command") String command;
    @JsonProperty("args") List<String> args;
    @JsonProperty("env") Map<String, String> env;
    @JsonProperty("socket") String socket;
    @JsonProperty("artifact") Artifact artifact;
    @JsonProperty("max_memory_bytes") String maxMemoryBytes;
    @JsonProperty("max_cpu_percent") String maxCpuPercent;
    @JsonProperty("limit_grace") String limitGrace;
  }

  record Artifact(
      @JsonProperty("url") String url,
      @JsonProperty("sha256") String sha256,
      @JsonProperty("unpack") String unpack,
      @JsonProperty("entry") String entry,
      @JsonProperty("timeout") String timeout,
      @JsonProperty("attempts") Integer attempts) {}
}
