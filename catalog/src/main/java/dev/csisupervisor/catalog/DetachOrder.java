package dev.csisupervisor.catalog;

import dev.csisupervisor.common.CsiIds;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * An operator's order to detach a node that is gone ({@code csi-agent cluster volume detach --node N --force}),
 * under {@code <prefix>/detaches/<node>}: the controller agent of each plugin id whose claims of the node it names
 * fences them at once, as past {@code detach_after} (ControllerUnpublishVolume to the node, then its claims and the
 * attachment deleted, in transactions that check the node is still gone and the order still there), whatever
 * {@code detach_after} says and even if the node stopped cleanly. The CLI removes it once done. As Nomad's {@code
 * volume detach} and the Kubernetes out-of-service taint: the unpublish comes first, the claim goes after.
 *
 * @param nodeId the node gone
 * @param pluginId only this plugin id's claims, if given
 * @param volumeId only this volume's claims (with {@code pluginId}), if given
 * @param asked when it was ordered
 */
public record DetachOrder(String nodeId, Optional<String> pluginId, Optional<String> volumeId, Instant asked) {
  public DetachOrder {
    CatalogKeys.checkNodeId(nodeId);
    Objects.requireNonNull(pluginId, "pluginId");
    Objects.requireNonNull(volumeId, "volumeId");
    Objects.requireNonNull(asked, "asked");
    pluginId.ifPresent(p -> CsiIds.checkPlugin("pluginId", p));
    if (volumeId.isPresent() && pluginId.isEmpty()) {
      throw new IllegalArgumentException("volumeId needs pluginId");
    }
  }

  /** Whether the order covers the node's claims of {@code plugin}/{@code volume}. */
  public boolean covers(String plugin, String volume) {
    return pluginId.map(plugin::equals).orElse(true) && volumeId.map(volume::equals).orElse(true);
  }
}
