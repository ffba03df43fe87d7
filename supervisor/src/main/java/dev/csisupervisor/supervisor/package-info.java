/**
 * The CSI plugin supervisor hook: what a scheduler agent's task runner calls for every task that
 * runs a CSI plugin.
 *
 * <p>The host agent builds one {@link dev.csisupervisor.supervisor.CsiPluginSupervisor} per node
 * (it owns the shared scheduler and the file watcher) and asks it for a
 * {@link dev.csisupervisor.supervisor.CsiPluginSupervisorHook} per task. The hook's prestart makes
 * the plugin's socket directory, poststart starts supervision (probe until ready, fingerprint by
 * capability, register, watch health for the plugin's whole life: unhealthy past the health
 * timeout means a restart request), and stop deregisters and cleans up. Durable registry commits
 * run on the supervisor's registry executor, never on the scheduler or under a hook's lock; task
 * events and lifecycle calls run on the scheduler outside every lock.
 */
package dev.csisupervisor.supervisor;
