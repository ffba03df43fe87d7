package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

/**
 * Identifies the task a hook belongs to.
 *
 * @param allocId  the allocation (or pod) the task runs in; part of every registry key
 * @param taskName the task's name inside the allocation, used in logs and events
 */
public record TaskContext(String allocId, String taskName) {
  public TaskContext {
    requireNonNull(allocId, "allocId");
    requireNonNull(taskName, "taskName");
    Validation.checkToken("allocId", allocId);
    Validation.checkToken("taskName", taskName);
  }
}
