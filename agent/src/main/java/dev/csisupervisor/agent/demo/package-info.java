/** {@code csi-agent demo}: three mock plugins, a crash and a restart, with no set-up. */
package dev.csisupervisor.agent.demo;
