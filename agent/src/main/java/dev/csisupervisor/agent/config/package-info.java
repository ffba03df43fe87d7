/** The agent's YAML config, read with Jackson into validated records. */
package dev.csisupervisor.agent.config;
