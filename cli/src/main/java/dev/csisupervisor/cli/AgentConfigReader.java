package dev.csisupervisor.cli;

import java.nio.file.Path;

/**
 * Reads an agent's config file for the admin socket that agent serves: how {@code --config} and
 * {@code $CSI_AGENT_CONFIG} find the agent. The CLI does not know the config's format; the program that
 * embeds its commands (csi-agent, with the daemon's config loader) gives one through {@link AdminCommands}.
 */
@FunctionalInterface
public interface AgentConfigReader {
  /**
   * The admin socket of the agent that {@code configFile} configures.
   *
   * @throws IllegalArgumentException with a message naming the file and what is wrong with it
   */
  Path adminSocket(Path configFile);
}
