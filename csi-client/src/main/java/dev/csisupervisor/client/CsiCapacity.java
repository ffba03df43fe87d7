package dev.csisupervisor.client;

import java.util.Objects;
import java.util.OptionalLong;

/**
 * What {@code GetCapacity} answered.
 *
 * @param availableCapacity the bytes available for volumes as asked; not negative
 * @param maximumVolumeSize the largest volume it would create, if it said
 * @param minimumVolumeSize the smallest volume it would create, if it said
 */
public record CsiCapacity(long availableCapacity, OptionalLong maximumVolumeSize, OptionalLong minimumVolumeSize) {
  public CsiCapacity {
    if (availableCapacity < 0) {
      throw new IllegalArgumentException("availableCapacity must not be negative, got " + availableCapacity);
    }
    Objects.requireNonNull(maximumVolumeSize, "maximumVolumeSize");
    Objects.requireNonNull(minimumVolumeSize, "minimumVolumeSize");
  }
}
