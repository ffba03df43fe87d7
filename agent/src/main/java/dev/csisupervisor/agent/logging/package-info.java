/**
 * The agent's logging: logback set up in code from the config's {@code log:} section and the
 * {@code CSI_AGENT_LOG_*} environment, text or JSON lines on stderr, changed in place on reload.
 */
package dev.csisupervisor.agent.logging;
