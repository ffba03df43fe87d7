package dev.csisupervisor.agent.config;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.tasks.artifact.ArtifactSpec;
import dev.csisupervisor.tasks.process.RestartPolicy;
import dev.csisupervisor.tasks.resources.ResourceLimits;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One plugin of the agent's config: launched by the agent ({@code command}, or an
 * {@code artifact} whose entry is the command) or started by someone else and only supervised
 * ({@code socket}); exactly one of the three.
 *
 * @param id       the plugin id: its registry name and its directory under the CSI root
 * @param type     controller, node or monolith
 * @param command  the program to run (absolute, or looked up on PATH), or null
 * @param args     its arguments
 * @param env      extra environment variables (the agent adds {@code CSI_ENDPOINT})
 * @param socket   an external plugin's socket, or null for a launched plugin
 * @param probe    how it is probed
 * @param restart  how it is restarted (launched plugins only)
 * @param artifact where the executable is downloaded from, or null
 * @param limits   resource limits (launched plugins only); {@link ResourceLimits#NONE} for none
 */
public record PluginSpec(String id, PluginKind type, String command, List<String> args,
    Map<String, String> env, Path socket, ProbeSettings probe, RestartPolicy restart,
    ArtifactSpec artifact, ResourceLimits limits) {

  /** The alloc id prefix: a configured plugin's alloc id is stable across agent restarts. */
  public static final String ALLOC_PREFIX = "agent-";

  public PluginSpec {
    requireNonNull(id, "id");
    requireNonNull(type, "type");
    args = List.copyOf(requireNonNull(args, "args"));
    env = Map.copyOf(requireNonNull(env, "env"));
    requireNonNull(probe, "probe");
    requireNonNull(restart, "restart");
    requireNonNull(limits, "limits");
    int sources = (command == null ? 0 : 1) + (socket == null ? 0 : 1)
        + (artifact == null ? 0 : 1);
    if (sources != 1) {
      throw new IllegalArgumentException(
          "plugin " + id + " needs exactly one of command, artifact and socket, got "
              + (sources == 0 ? "none" : sources));
    }
    if (command != null && command.isBlank()) {
      throw new IllegalArgumentException("plugin " + id + ": command must not be blank");
    }
    if (socket != null && !socket.isAbsolute()) {
      throw new IllegalArgumentException("plugin " + id + ": socket must be absolute, got " + socket);
    }
    if (socket != null && limits.any()) {
      throw new IllegalArgumentException("plugin " + id + ": resource limits need a launched"
          + " plugin, not a socket");
    }
  }

  /** A plugin without artifact or limits. */
  public PluginSpec(String id, PluginKind type, String command, List<String> args,
      Map<String, String> env, Path socket, ProbeSettings probe, RestartPolicy restart) {
    this(id, type, command, args, env, socket, probe, restart, null, ResourceLimits.NONE);
  }

  /** Whether the agent runs this plugin's process. */
  public boolean launched() {
    return socket == null;
  }

  public Optional<Path> externalSocket() {
    return Optional.ofNullable(socket);
  }

  public Optional<ArtifactSpec> artifactSpec() {
    return Optional.ofNullable(artifact);
  }

  /** The alloc id the plugin is registered under; the same on every agent start. */
  public String allocId() {
    return ALLOC_PREFIX + id;
  }

  public PluginSpec withArtifact(ArtifactSpec artifact) {
    return new PluginSpec(id, type, artifact == null ? command : null, args, env, socket, probe,
        restart, artifact, limits);
  }

  public PluginSpec withLimits(ResourceLimits limits) {
    return new PluginSpec(id, type, command, args, env, socket, probe, restart, artifact, limits);
  }

  /**
   * Whether {@code other} differs from this only in what the process runs (command, args, env,
   * artifact, limits): such a change restarts the process under the same supervision, so the
   * plugin's registration is updated rather than replaced.
   */
  public boolean sameSupervision(PluginSpec other) {
    return id.equals(other.id) && type == other.type && Objects.equals(socket, other.socket)
        && probe.equals(other.probe) && restart.equals(other.restart)
        && launched() && other.launched();
  }
}
