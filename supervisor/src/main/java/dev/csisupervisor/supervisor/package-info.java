/**
 * The CSI plugin supervisor hook: what a scheduler agent's task runner calls for every task that
 * runs a CSI plugin.
 *
 * <p>The host agent builds one {@link dev.csisupervisor.supervisor.CsiPluginSupervisor} per node
 * (it owns the shared scheduler and the socket watcher) and asks it for a
 * {@link dev.csisupervisor.supervisor.CsiPluginSupervisorHook} per task. The hook's prestart makes
 * the plugin's socket directory, poststart starts supervision (probe until ready, fingerprint,
 * register, watch health), and stop deregisters and cleans up.
 */
package dev.csisupervisor.supervisor;
