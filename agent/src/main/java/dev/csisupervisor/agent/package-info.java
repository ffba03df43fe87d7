/**
 * The csi-agent daemon: {@link dev.csisupervisor.agent.Agent} runs the configured CSI plugins through the
 * task runner (module {@code tasks}), supervises and registers them, and serves the admin API and metrics.
 * The program ({@code commands/}, entry point {@code dev.csisupervisor.agent.commands.Main}) puts the daemon's
 * commands and the CLI's (module {@code cli}) on one command line; nothing else here depends on the CLI.
 */
package dev.csisupervisor.agent;
