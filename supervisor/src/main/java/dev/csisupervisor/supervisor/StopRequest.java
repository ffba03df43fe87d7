package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

/**
 * The task runner's stop call.
 *
 * @param reason why the task stops, for logs
 */
public record StopRequest(String reason) {
  public StopRequest {
    requireNonNull(reason, "reason");
  }

  public static StopRequest because(String reason) {
    return new StopRequest(reason);
  }
}
