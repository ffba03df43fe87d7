package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import java.util.Map;

/**
 * The task runner's prestart call.
 *
 * @param taskEnv the environment the task already has (a {@code CSI_ENDPOINT} there wins)
 */
public record PrestartRequest(Map<String, String> taskEnv) {
  public PrestartRequest {
    taskEnv = Map.copyOf(requireNonNull(taskEnv, "taskEnv"));
  }

  public static PrestartRequest withEnv(Map<String, String> taskEnv) {
    return new PrestartRequest(taskEnv);
  }
}
