package dev.csisupervisor.supervisor;

/**
 * What the hook may ask of the task runner. Implemented by the host agent.
 *
 * <p>Called on the supervisor's scheduler threads, outside every lock of the supervisor, after the
 * {@link TaskEvent#RESTART_REQUESTED} event of the same hook; must not block (queue the restart
 * and return). After a restart the runner calls prestart and poststart again: supervision goes
 * on, and the new process gets a first start's fast path (socket watch, fresh backoff, fresh
 * health deadline). A runner that cannot restart the plugin (one started outside it) may ignore
 * the request: the plugin then stays registered as unhealthy, and is asked for again after
 * another health timeout.
 */
@FunctionalInterface
public interface TaskLifecycle {
  void restart(String reason);
}
