package dev.csisupervisor.client;

import dev.csisupervisor.common.Bounds;

/**
 * CSI's {@code CapacityRange}: the volume must be at least {@code requiredBytes} and at most
 * {@code limitBytes}; 0 means "not specified" for either (CSI's default). At least one must be set.
 */
public record CapacityRange(long requiredBytes, long limitBytes) {
  public CapacityRange {
    Bounds.notNegative(requiredBytes, "requiredBytes");
    Bounds.notNegative(limitBytes, "limitBytes");
    if (requiredBytes == 0 && limitBytes == 0) {
      throw new IllegalArgumentException("requiredBytes or limitBytes must be set, got both 0");
    }
    if (limitBytes != 0 && requiredBytes > limitBytes) {
      throw new IllegalArgumentException(
          "requiredBytes must be <= limitBytes, got " + requiredBytes + " > " + limitBytes);
    }
  }

  /** At least {@code bytes}, no limit. */
  public static CapacityRange atLeast(long bytes) {
    return new CapacityRange(Bounds.positive(bytes, "requiredBytes"), 0);
  }
}
