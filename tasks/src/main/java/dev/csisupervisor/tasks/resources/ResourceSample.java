package dev.csisupervisor.tasks.resources;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Bounds;
import java.time.Instant;

/**
 * One sample of a plugin's process tree (its process and its descendants).
 *
 * @param time        when it was taken
 * @param pid         the plugin's process
 * @param cpuPercent  CPU used since the previous sample of the same process, in percent of one
 *                    core (for the first sample of a process: its average since it started); {@link
 *                    Double#NaN} if unknown
 * @param memoryBytes resident memory now
 */
public record ResourceSample(Instant time, long pid, double cpuPercent, long memoryBytes) {
  public ResourceSample {
    requireNonNull(time, "time");
    Bounds.atLeast(memoryBytes, 0, "memoryBytes");
  }

  public boolean cpuKnown() {
    return !Double.isNaN(cpuPercent);
  }
}
