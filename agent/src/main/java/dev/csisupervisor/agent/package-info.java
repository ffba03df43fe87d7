/**
 * The csi-agent daemon: {@link dev.csisupervisor.agent.Agent} runs the configured CSI plugins as
 * the node's task runner (launch, supervise, restart, register) and serves the admin API and
 * metrics. The CLI ({@code cli/}, entry point {@code dev.csisupervisor.agent.cli.Main}) sits on
 * top of it; nothing here depends on the CLI.
 */
package dev.csisupervisor.agent;
