/**
 * The {@code csi-agent} program ({@link dev.csisupervisor.agent.commands.Main}): the daemon's own commands
 * ({@code run}, {@code demo}, {@code state}, {@code cluster}, {@code class-data-training}) and, from the
 * {@code cli} module, the admin commands that talk to a running agent, on one command line.
 */
package dev.csisupervisor.agent.commands;
