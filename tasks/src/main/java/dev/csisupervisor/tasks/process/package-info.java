/**
 * Plugin processes: launching and re-attaching, stopping with a grace period, the restart
 * policy, size-bounded logs and the process records kept for re-attaching after a restart.
 */
package dev.csisupervisor.tasks.process;
