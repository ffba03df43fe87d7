/** The picocli commands of {@code csi-agent}. */
package dev.csisupervisor.agent.cli;
