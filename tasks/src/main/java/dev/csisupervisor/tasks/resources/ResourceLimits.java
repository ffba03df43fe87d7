package dev.csisupervisor.tasks.resources;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;

/**
 * Resource limits of a launched plugin: a plugin whose process tree stays over a limit for
 * {@code grace} (every sample in that time over it) is restarted.
 *
 * @param maxMemoryBytes resident memory limit in bytes; 0 for none
 * @param maxCpuPercent  CPU limit in percent of one core (200 = two cores); 0 for none
 * @param grace          how long the plugin may stay over a limit before it is restarted
 */
public record ResourceLimits(long maxMemoryBytes, double maxCpuPercent, Duration grace) {
  public static final Duration DEFAULT_GRACE = Duration.ofSeconds(30);
  /** No limits. */
  public static final ResourceLimits NONE = new ResourceLimits(0, 0, DEFAULT_GRACE);

  public ResourceLimits {
    requireNonNull(grace, "grace");
    Bounds.atLeast(maxMemoryBytes, 0, "maxMemoryBytes");
    if (!(maxCpuPercent >= 0) || Double.isInfinite(maxCpuPercent)) {
      throw new IllegalArgumentException("maxCpuPercent must be a number >= 0, got "
          + maxCpuPercent);
    }
    Bounds.notNegative(grace, "grace");
  }

  /** Whether any limit is set. */
  public boolean any() {
    return maxMemoryBytes > 0 || maxCpuPercent > 0;
  }
}
