package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import java.time.Instant;
import java.util.Objects;

/**
 * A registered volume's condition as the plugin id's controller agent last saw it ({@code
 * <prefix>/conditions/<plugin>/<vol>}); a normal volume has none (recovery deletes the key). Immutable.
 *
 * @param pluginId the plugin id
 * @param volumeId the volume
 * @param kind what is wrong
 * @param message the plugin's words for an {@link Kind#ABNORMAL} volume (CSI {@code volume_condition.message}); for
 *     {@link Kind#MISSING}, how it was found missing
 * @param since when the controller agent first saw it so
 */
public record VolumeCondition(String pluginId, String volumeId, Kind kind, String message, Instant since) {

  /** What the controller agent saw. */
  public enum Kind {
    /** The plugin reports the volume's condition abnormal (VOLUME_CONDITION). */
    ABNORMAL,
    /** The plugin does not have the registered volume (ListVolumes without it, or ControllerGetVolume NOT_FOUND). */
    MISSING
  }

  public VolumeCondition {
    CsiIds.checkPlugin("pluginId", pluginId);
    CsiIds.checkVolume("volumeId", volumeId);
    Objects.requireNonNull(kind, "kind");
    if (message == null) {
      throw new IllegalArgumentException("message must not be null");
    }
    if (since == null) {
      throw new IllegalArgumentException("since must not be null");
    }
  }

  /** Whether {@code other} says the same (kind and message), whenever it was seen. */
  public boolean sameAs(VolumeCondition other) {
    return other != null && kind == other.kind && message.equals(other.message);
  }

  /** In words, for status: {@code ABNORMAL since T: message}. */
  public String describe() {
    return kind + " since " + since + (message.isEmpty() ? "" : ": " + message);
  }
}
