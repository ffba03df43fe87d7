package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A volume as the plugin reported it ({@code CreateVolume}, {@code ListVolumes}, {@code ControllerGetVolume}).
 *
 * @param volumeId the plugin's id for it; never blank (a blank one is an {@link InvalidResponseException})
 * @param capacityBytes its size; 0 means unknown (CSI)
 * @param volumeContext what to pass to later calls for it
 * @param accessibleTopology where it can be reached; empty means everywhere
 * @param contentSource what the plugin says it was pre-populated from; empty: nothing (or not said)
 */
public record CsiVolume(String volumeId, long capacityBytes, Map<String, String> volumeContext,
    List<Map<String, String>> accessibleTopology, Optional<ContentSource> contentSource) {
  public CsiVolume {
    Values.requireNonBlank(volumeId, "volumeId");
    if (capacityBytes < 0) {
      throw new IllegalArgumentException("capacityBytes must not be negative, got " + capacityBytes);
    }
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
    accessibleTopology = Objects.requireNonNull(accessibleTopology, "accessibleTopology").stream()
        .<Map<String, String>>map(m -> Values.copyOf(m, "accessibleTopology")).toList();
    Objects.requireNonNull(contentSource, "contentSource");
  }

  /** Without a content source. */
  public CsiVolume(String volumeId, long capacityBytes, Map<String, String> volumeContext,
      List<Map<String, String>> accessibleTopology) {
    this(volumeId, capacityBytes, volumeContext, accessibleTopology, Optional.empty());
  }
}
