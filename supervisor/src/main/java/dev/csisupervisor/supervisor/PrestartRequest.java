package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Printable;
import java.util.Map;

/**
 * The task runner's prestart call.
 *
 * @param taskEnv the environment the task already has (a {@code CSI_ENDPOINT} there wins)
 */
public record PrestartRequest(Map<String, String> taskEnv) {
  public PrestartRequest {
    requireNonNull(taskEnv, "taskEnv");
    taskEnv.forEach((k, v) -> {
      if (k == null || v == null) {
        throw new IllegalArgumentException("taskEnv must not contain null names or values, got "
            + Printable.quote(String.valueOf(k)) + "=" + Printable.quote(String.valueOf(v)));
      }
    });
    taskEnv = Map.copyOf(taskEnv);
  }

  public static PrestartRequest withEnv(Map<String, String> taskEnv) {
    return new PrestartRequest(taskEnv);
  }
}
