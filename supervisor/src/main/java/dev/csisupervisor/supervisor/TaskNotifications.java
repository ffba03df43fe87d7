package dev.csisupervisor.supervisor;

import java.time.Clock;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one hook tells the task runner: its task events and its restart requests, in the order the transitions
 * happened, one at a time, on the scheduler and outside every lock (the runner may call back into the hook). A
 * throwing emitter or lifecycle is logged; the next notification still goes. Thread-safe; {@link #event} and
 * {@link #restart} never run anything on the caller's thread, so they may be called under the hook's lock.
 */
final class TaskNotifications {
  private static final Logger log = LoggerFactory.getLogger(TaskNotifications.class);

  private final String pluginId;
  private final Clock clock;
  private final TaskEventEmitter events;
  private final TaskLifecycle lifecycle;
  private final Executor inOrder;

  TaskNotifications(String pluginId, Executor scheduler, Clock clock, TaskEventEmitter events,
      TaskLifecycle lifecycle) {
    this.pluginId = pluginId;
    this.clock = clock;
    this.events = events;
    this.lifecycle = lifecycle;
    this.inOrder = new SerialExecutor(scheduler);
  }

  /** Queues a task event of {@code type}, stamped now. */
  void event(String type, String message) {
    TaskEvent event = new TaskEvent(type, message, clock.instant());
    inOrder.execute(() -> {
      try {
        events.emit(event);
      } catch (RuntimeException e) {
        log.error("plugin={}: task event emitter threw", pluginId, e);
      }
    });
  }

  /** Queues a restart request (after the events queued before it). */
  void restart(String reason) {
    inOrder.execute(() -> {
      try {
        lifecycle.restart(reason);
      } catch (RuntimeException e) {
        log.error("plugin={}: task restart request failed", pluginId, e);
      }
    });
  }
}
