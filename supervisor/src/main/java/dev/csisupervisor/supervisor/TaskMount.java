package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;

/**
 * A mount the task runner adds to the plugin's task.
 *
 * @param hostPath    the path on the node
 * @param taskPath    where it appears inside the task
 * @param propagation mount propagation (a CSI node plugin needs bidirectional on its mount dir)
 * @param readOnly    whether the task sees it read-only
 */
public record TaskMount(Path hostPath, String taskPath, Propagation propagation, boolean readOnly) {
  /** Mount propagation, with the names container runtimes use. */
  public enum Propagation { PRIVATE, HOST_TO_TASK, BIDIRECTIONAL }

  public TaskMount {
    requireNonNull(hostPath, "hostPath");
    requireNonNull(taskPath, "taskPath");
    requireNonNull(propagation, "propagation");
    if (!taskPath.startsWith("/")) {
      throw new IllegalArgumentException("taskPath must be absolute, got " + taskPath);
    }
  }
}
