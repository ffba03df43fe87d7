package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;

/**
 * What the task runner adds to the task before starting it.
 *
 * @param mounts mounts to add (the plugin directory and {@code /dev})
 * @param env    environment variables to set (only those the task does not already set)
 */
public record PrestartResponse(List<TaskMount> mounts, Map<String, String> env) {
  public PrestartResponse {
    mounts = List.copyOf(requireNonNull(mounts, "mounts"));
    env = Map.copyOf(requireNonNull(env, "env"));
  }
}
