package dev.csisupervisor.agent.config;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.PluginKind;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One plugin of the agent's config: either launched by the agent ({@code command} set) or started
 * by someone else and only supervised ({@code socket} set), never both.
 *
 * @param id      the plugin id: its registry name and its directory under the CSI root
 * @param type    controller, node or monolith
 * @param command the program to run (absolute, or looked up on PATH), or null for an external plugin
 * @param args    its arguments
 * @param env     extra environment variables (the agent adds {@code CSI_ENDPOINT})
 * @param socket  an external plugin's socket, or null for a launched plugin
 * @param probe   how it is probed
 * @param restart how it is restarted (launched plugins only)
 */
public record PluginSpec(String id, PluginKind type, String command, List<String> args,
    Map<String, String> env, Path socket, ProbeSettings probe, RestartPolicy restart) {

  /** The alloc id prefix: a configured plugin's alloc id is stable across agent restarts. */
  public static final String ALLOC_PREFIX = "agent-";

  public PluginSpec {
    requireNonNull(id, "id");
    requireNonNull(type, "type");
    args = List.copyOf(requireNonNull(args, "args"));
    env = Map.copyOf(requireNonNull(env, "env"));
    requireNonNull(probe, "probe");
    requireNonNull(restart, "restart");
    if ((command == null) == (socket == null)) {
      throw new IllegalArgumentException(
          "plugin " + id + " needs exactly one of command and socket, got "
              + (command == null ? "neither" : "both"));
    }
    if (command != null && command.isBlank()) {
      throw new IllegalArgumentException("plugin " + id + ": command must not be blank");
    }
    if (socket != null && !socket.isAbsolute()) {
      throw new IllegalArgumentException("plugin " + id + ": socket must be absolute, got " + socket);
    }
  }

  /** Whether the agent runs this plugin's process. */
  public boolean launched() {
    return command != null;
  }

  public Optional<Path> externalSocket() {
    return Optional.ofNullable(socket);
  }

  /** The alloc id the plugin is registered under; the same on every agent start. */
  public String allocId() {
    return ALLOC_PREFIX + id;
  }
}
