package dev.csisupervisor.supervisor;

/**
 * What the hook may ask of the task runner. Implemented by the host agent.
 *
 * <p>Called from the supervisor's scheduler threads; must not block (queue the restart and
 * return). After a restart the runner calls prestart and poststart again; supervision goes on.
 */
@FunctionalInterface
public interface TaskLifecycle {
  void restart(String reason);
}
