package dev.csisupervisor.supervisor;

/**
 * The task runner's poststart call.
 *
 * @param pid the task's main process id if the runner knows it, else 0 (used in logs only)
 */
public record PoststartRequest(long pid) {
  public PoststartRequest {
    if (pid < 0) {
      throw new IllegalArgumentException("pid must be >= 0, got " + pid);
    }
  }

  public static PoststartRequest of() {
    return new PoststartRequest(0);
  }
}
