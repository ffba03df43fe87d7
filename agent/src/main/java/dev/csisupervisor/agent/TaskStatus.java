package dev.csisupervisor.agent;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import java.nio.file.Path;

/**
 * A snapshot of one plugin task.
 *
 * @param id           the plugin id
 * @param kind         controller, node or monolith
 * @param allocId      its registry alloc id
 * @param launched     whether the agent runs its process
 * @param processState the process's state ({@link ProcessState#EXTERNAL} for a socket-only plugin)
 * @param pid          the current process id, or 0
 * @param restarts     restarts since the agent started
 * @param reattached   whether the current process was re-attached rather than launched
 * @param phase        the supervisor hook's phase
 * @param healthy      whether the last probe found it healthy
 * @param socket       the plugin's socket
 * @param logFile      its log file, or null for a socket-only plugin
 */
public record TaskStatus(String id, PluginKind kind, String allocId, boolean launched,
    ProcessState processState, long pid, int restarts, boolean reattached,
    CsiPluginSupervisorHook.Phase phase, boolean healthy, Path socket, Path logFile) {

  /** Where a plugin task's process is. */
  public enum ProcessState {
    /** Not started yet. */
    NEW,
    /** Being launched. */
    STARTING,
    /** Running (launched or re-attached). */
    RUNNING,
    /** Exited; waiting for the restart delay. */
    RESTARTING,
    /** Exited and not restarted (the restart policy gave up, or it cannot be started). */
    FAILED,
    /** Being stopped. */
    STOPPING,
    /** Stopped by the agent. */
    STOPPED,
    /** Left running on agent shutdown. */
    DETACHED,
    /** Not the agent's: a socket-only plugin. */
    EXTERNAL
  }
}
