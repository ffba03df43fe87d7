package dev.csisupervisor.supervisor;

/**
 * Where a hook sends its task events. Implemented by the host agent.
 *
 * <p>Called on the supervisor's scheduler threads, outside every lock of the supervisor (so an
 * implementation may call back into the hook, e.g. {@code phase()} or {@code healthy()}), one
 * call at a time per hook and in the order the transitions happened; implementations must not
 * block for long.
 */
@FunctionalInterface
public interface TaskEventEmitter {
  void emit(TaskEvent event);

  /** An emitter that drops every event (for hosts that have no task history). */
  static TaskEventEmitter discarding() {
    return event -> {};
  }
}
