package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import dev.csisupervisor.common.Values;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A volume as the cluster knows it: {@code <prefix>/volumes/<plugin>/<vol>}, written when it is created through
 * a controller or registered by id (an existing disk). Never secrets. Immutable.
 *
 * @param pluginId the plugin id (controller and node plugins share it)
 * @param volumeId the volume id as the controller named it (any id CSI allows)
 * @param capacityBytes its capacity, 0 if unknown
 * @param accessModes the access modes a claim may ask for; empty: any
 * @param accessibleTopology CSI's accessible_topology: the segments it is reachable from; a node is in one if
 *     it has every key of the segment with the same value; empty: everywhere
 * @param parameters the CreateVolume parameters it was made with
 * @param volumeContext CSI's volume_context, passed to publish and stage
 * @param source what it was made from (a snapshot, or the volume it clones), if anything
 * @param mutableParameters the mutable parameters it was created or last modified with (ControllerModifyVolume);
 *     the current values, since {@code volumeContext} never changes
 * @param validated false for a volume registered by id that no plugin confirmed (ValidateVolumeCapabilities not
 *     asked, or not offered): shown as "not validated"
 */
public record ClusterVolume(String pluginId, String volumeId, long capacityBytes, Set<VolumeAccessMode> accessModes,
    List<Map<String, String>> accessibleTopology, Map<String, String> parameters, Map<String, String> volumeContext,
    Optional<VolumeSource> source, Map<String, String> mutableParameters, boolean validated) {

  /** A volume made from nothing, with no mutable parameters, validated (made by its plugin). */
  public ClusterVolume(String pluginId, String volumeId, long capacityBytes, Set<VolumeAccessMode> accessModes,
      List<Map<String, String>> accessibleTopology, Map<String, String> parameters, Map<String, String> volumeContext) {
    this(pluginId, volumeId, capacityBytes, accessModes, accessibleTopology, parameters, volumeContext,
        Optional.empty(), Map.of(), true);
  }

  public ClusterVolume {
    CsiIds.checkPlugin("pluginId", pluginId);
    CsiIds.checkVolume("volumeId", volumeId);
    if (capacityBytes < 0) {
      throw new IllegalArgumentException("capacityBytes must not be negative, got " + capacityBytes);
    }
    Objects.requireNonNull(accessModes, "accessModes");
    if (accessModes.stream().anyMatch(java.util.Objects::isNull)) {
      throw new IllegalArgumentException("accessModes must not contain null, got " + accessModes);
    }
    accessModes = accessModes.isEmpty() ? Set.of() : Collections.unmodifiableSet(EnumSet.copyOf(accessModes));
    Objects.requireNonNull(accessibleTopology, "accessibleTopology");
    List<Map<String, String>> segments = new ArrayList<>();
    for (int i = 0; i < accessibleTopology.size(); i++) {
      Map<String, String> s = accessibleTopology.get(i);
      if (s == null || s.isEmpty()) {
        throw new IllegalArgumentException("accessibleTopology[" + i + "] must be a non-empty segment, got " + s);
      }
      segments.add(Values.copyOf(s, "accessibleTopology[" + i + "]"));
    }
    accessibleTopology = List.copyOf(segments);
    parameters = Values.copyOf(parameters, "parameters");
    volumeContext = Values.copyOf(volumeContext, "volumeContext");
    Objects.requireNonNull(source, "source");
    mutableParameters = Values.copyOf(mutableParameters, "mutableParameters");
  }

  /** The same, with {@code changed} merged into its mutable parameters (a ControllerModifyVolume done). */
  public ClusterVolume modified(Map<String, String> changed) {
    Map<String, String> merged = new java.util.TreeMap<>(mutableParameters);
    merged.putAll(changed);
    return new ClusterVolume(pluginId, volumeId, capacityBytes, accessModes, accessibleTopology, parameters,
        volumeContext, source, merged, validated);
  }

  /** The same, marked validated or not. */
  public ClusterVolume withValidated(boolean v) {
    return new ClusterVolume(pluginId, volumeId, capacityBytes, accessModes, accessibleTopology, parameters,
        volumeContext, source, mutableParameters, v);
  }

  /** Whether a node with this topology can reach the volume (CSI: it is in one of the volume's segments). */
  public boolean accessibleFrom(Map<String, String> nodeTopology) {
    if (accessibleTopology.isEmpty()) {
      return true;
    }
    for (Map<String, String> segment : accessibleTopology) {
      boolean all = true;
      for (Map.Entry<String, String> e : segment.entrySet()) {
        if (!e.getValue().equals(nodeTopology.get(e.getKey()))) {
          all = false;
          break;
        }
      }
      if (all) {
        return true;
      }
    }
    return false;
  }
}
