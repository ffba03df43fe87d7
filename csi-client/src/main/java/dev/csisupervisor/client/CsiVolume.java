package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import java.util.List;
import java.util.Map;

/**
 * A volume as {@code CreateVolume} returned it.
 *
 * @param volumeId the plugin's id for it; never blank (a blank one is an {@link InvalidResponseException})
 * @param capacityBytes its size; 0 means unknown (CSI)
 * @param volumeContext what to pass to later calls for it
 * @param accessibleTopology where it can be reached; empty means everywhere
 */
public record CsiVolume(String volumeId, long capacityBytes, Map<String, String> volumeContext,
    List<Map<String, String>> accessibleTopology) {
  public CsiVolume {
    Values.requireNonBlank(volumeId, "volumeId");
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
    accessibleTopology = accessibleTopology.stream().<Map<String, String>>map(m -> Values.copyOf(m, "accessibleTopology")).toList();
  }
}
