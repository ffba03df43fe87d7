package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import java.time.Instant;
import java.util.List;
import java.util.TreeSet;

/**
 * What a plugin has that no record names, and what the records name that the plugin lacks, as its controller agent
 * last saw them ({@code <prefix>/leaks/<plugin>}): reported, never deleted from the plugin. Lists sorted, without
 * duplicates. Immutable.
 *
 * @param pluginId the plugin id
 * @param volumes volume ids the plugin lists that no registered volume names
 * @param snapshots snapshot ids the plugin lists that no snapshot record names
 * @param missingSnapshots snapshot records whose id the plugin does not list
 * @param unrecordedPublications {@code volume@csiNode}: a node the plugin says a volume is published to with no
 *     attachment of the volume there (CSI: reported only)
 * @param since when the controller agent first saw this content
 */
public record ControllerLeaks(String pluginId, List<String> volumes, List<String> snapshots,
    List<String> missingSnapshots, List<String> unrecordedPublications, Instant since) {

  public ControllerLeaks {
    CsiIds.checkPlugin("pluginId", pluginId);
    volumes = sorted(volumes, "volumes");
    snapshots = sorted(snapshots, "snapshots");
    missingSnapshots = sorted(missingSnapshots, "missingSnapshots");
    unrecordedPublications = sorted(unrecordedPublications, "unrecordedPublications");
    if (since == null) {
      throw new IllegalArgumentException("since must not be null");
    }
  }

  private static List<String> sorted(List<String> ids, String field) {
    if (ids == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    for (int i = 0; i < ids.size(); i++) {
      if (ids.get(i) == null || ids.get(i).isBlank()) {
        throw new IllegalArgumentException(field + "[" + i + "] must not be blank, got '" + ids.get(i) + "'");
      }
    }
    return List.copyOf(new TreeSet<>(ids));
  }

  /** Nothing found. */
  public boolean isEmpty() {
    return volumes.isEmpty() && snapshots.isEmpty() && missingSnapshots.isEmpty() && unrecordedPublications.isEmpty();
  }

  /** Whether {@code other} lists the same, whenever it was seen. */
  public boolean sameAs(ControllerLeaks other) {
    return other != null && pluginId.equals(other.pluginId) && volumes.equals(other.volumes)
        && snapshots.equals(other.snapshots) && missingSnapshots.equals(other.missingSnapshots)
        && unrecordedPublications.equals(other.unrecordedPublications);
  }
}
