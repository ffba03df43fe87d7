/**
 * The csi-agent daemon: {@link dev.csisupervisor.agent.Agent} runs the configured CSI plugins as
 * the node's task runner (launch, supervise, restart, register) and serves the admin API and
 * metrics; {@link dev.csisupervisor.agent.Main} is the CLI's entry point.
 */
package dev.csisupervisor.agent;
