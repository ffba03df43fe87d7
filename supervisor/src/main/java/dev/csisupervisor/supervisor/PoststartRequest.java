package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.Bounds;
/**
 * The task runner's poststart call.
 *
 * @param pid the task's main process id if the runner knows it, else 0 (used in logs only)
 */
public record PoststartRequest(long pid) {
  public PoststartRequest {
    Bounds.atLeast(pid, 0, "pid");
  }

  public static PoststartRequest of() {
    return new PoststartRequest(0);
  }
}
