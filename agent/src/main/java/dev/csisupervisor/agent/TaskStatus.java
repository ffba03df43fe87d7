package dev.csisupervisor.agent;

import dev.csisupervisor.tasks.resources.ResourceLimits;
import dev.csisupervisor.tasks.resources.ResourceSample;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

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
 * @param discovered   whether it was found in the discovery directory rather than configured
 * @param revision     the artifact revision the process runs ({@code <id>_<sha256 prefix>}), or
 *                     null
 * @param artifactError why the configured artifact could not be made ready, or null
 * @param limits       its resource limits
 * @param limitRestarts restarts because it stayed over a resource limit
 * @param resources    its resource samples, oldest first (empty if not sampled)
 * @param lastFailure  why the process last failed to start or exited on its own, or null
 * @param lastFailureTime when that was, or null
 */
public record TaskStatus(String id, PluginKind kind, String allocId, boolean launched,
    ProcessState processState, long pid, int restarts, boolean reattached,
    CsiPluginSupervisorHook.Phase phase, boolean healthy, Path socket, Path logFile,
    boolean discovered, String revision, String artifactError, ResourceLimits limits,
    int limitRestarts, List<ResourceSample> resources, String lastFailure,
    java.time.Instant lastFailureTime) {

  public TaskStatus {
    resources = List.copyOf(resources);
    if ((lastFailure == null) != (lastFailureTime == null)) {
      throw new IllegalArgumentException("lastFailure and lastFailureTime go together, got "
          + lastFailure + " at " + lastFailureTime);
    }
  }

  /** The latest resource sample of the current process, if any. */
  public Optional<ResourceSample> latestResources() {
    if (resources.isEmpty() || pid == 0) {
      return Optional.empty();
    }
    ResourceSample s = resources.get(resources.size() - 1);
    return s.pid() == pid ? Optional.of(s) : Optional.empty();
  }

  /** Where a plugin task's process is. */
  public enum ProcessState {
    /** Not started yet. */
    NEW,
    /** Its artifact is being downloaded and unpacked. */
    FETCHING,
    /** Being launched. */
    STARTING,
    /** Running (launched or re-attached). */
    RUNNING,
    /** Exited; waiting for the restart delay. */
    RESTARTING,
    /**
     * Exited and not restarted (the restart policy gave up, or it cannot be started), or its
     * artifact could not be made ready.
     */
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
