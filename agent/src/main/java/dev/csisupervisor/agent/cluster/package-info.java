/** The agent's part in the cluster catalog (module {@code catalog/}): publishing and the config section. */
package dev.csisupervisor.agent.cluster;
