/** The agent's Prometheus metrics. */
package dev.csisupervisor.agent.metrics;
