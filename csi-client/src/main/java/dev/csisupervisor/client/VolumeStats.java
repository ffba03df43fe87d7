package dev.csisupervisor.client;

import java.util.List;
import java.util.Optional;

/**
 * What {@code NodeGetVolumeStats} returned.
 *
 * @param usage one entry per unit the plugin reported (bytes, inodes)
 * @param condition the volume's condition, if the plugin reported one ({@code VOLUME_CONDITION})
 */
public record VolumeStats(List<Usage> usage, Optional<Condition> condition) {
  public VolumeStats {
    usage = List.copyOf(usage);
    java.util.Objects.requireNonNull(condition, "condition");
  }

  /** CSI's {@code VolumeUsage.Unit}; {@code UNKNOWN} also for numbers this build does not know. */
  public enum Unit { UNKNOWN, BYTES, INODES }

  /** One {@code VolumeUsage}: 0 means unknown for each number (CSI: the fields are optional). */
  public record Usage(long available, long total, long used, Unit unit) {
    public Usage {
      java.util.Objects.requireNonNull(unit, "unit");
    }
  }

  /** {@code VolumeCondition}: abnormal or not, with the plugin's message. */
  public record Condition(boolean abnormal, String message) {
    public Condition {
      java.util.Objects.requireNonNull(message, "message");
    }
  }
}
