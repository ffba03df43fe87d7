/**
 * The csi-agent daemon: {@link dev.csisupervisor.agent.Agent} runs the configured CSI plugins through the
 * task runner (module {@code tasks}), supervises and registers them, and serves the admin API and metrics.
 * The program ({@code commands/}, entry point {@code dev.csisupervisor.agent.commands.Main}) puts the daemon's
 * commands and the CLI's (module {@code cli}) on one command line. Elsewhere the daemon uses only the CLI's
 * admin client: to tell a stale admin socket from a live agent's, and in the demo.
 */
package dev.csisupervisor.agent;
