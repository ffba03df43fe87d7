package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.common.CsiIds;
import java.util.Optional;

/** A snapshot named on the command line, found in etcd by its id or by the name it was asked by. */
final class ClusterVolumeSnapshots {
  private ClusterVolumeSnapshots() {}

  /**
   * The recorded snapshot {@code idOrName} of the plugin id: by id, else through the snapshot request of that name
   * (done, or pending and cut already: its id).
   *
   * @param field the option or parameter that named it, for the errors
   * @throws IllegalArgumentException if no snapshot has that id or name (naming {@code field})
   * @throws VolumeStateException if the name's snapshot is not cut yet, or its request failed or was cancelled
   */
  static ClusterVolumeSnapshot find(ClusterVolumes v, String plugin, String field, String idOrName)
      throws VolumeStateException {
    CsiIds.checkPlugin("PLUGIN", plugin);
    CsiIds.checkVolume(field, idOrName);
    Optional<ClusterVolumeSnapshot> byId = v.snapshot(plugin, idOrName);
    if (byId.isPresent()) {
      return byId.get();
    }
    Optional<ClusterVolumeRequest> asked = v.request(ClusterVolumeRequest.Kind.SNAPSHOT, plugin, idOrName);
    if (asked.isEmpty()) {
      throw new IllegalArgumentException(field + ": no snapshot of plugin " + plugin + " has the id or name '"
          + idOrName + "' (csi-agent cluster volume snapshot list " + plugin + ")");
    }
    ClusterVolumeRequest r = asked.get();
    switch (r.state()) {
      case FAILED, CANCELLED -> throw new VolumeStateException(field + ": the " + r.describe() + " is "
          + r.state().name().toLowerCase(java.util.Locale.ROOT) + ": " + r.message());
      default -> {
        if (r.volumeId().isEmpty()) {
          throw new VolumeStateException(field + ": snapshot " + idOrName + " of plugin " + plugin + " is not cut "
              + "yet (" + ClusterViews.progress(r, v.read()) + "): ask again once CreateSnapshot answered "
              + "(csi-agent cluster volume snapshot list " + plugin + " shows its id)");
        }
        return v.snapshot(plugin, r.volumeId()).orElseThrow(() -> new VolumeStateException(field + ": snapshot "
            + idOrName + " of plugin " + plugin + " was cut as " + r.volumeId() + ", which is not recorded now "
            + "(deleted meanwhile?)"));
      }
    }
  }
}
