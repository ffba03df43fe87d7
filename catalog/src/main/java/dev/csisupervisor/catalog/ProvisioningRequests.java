package dev.csisupervisor.catalog;

import java.util.List;
import java.util.Optional;

/**
 * Create and delete requests, desired state that the plugin id's controller agent acts on: whoever asks writes one;
 * the controller agent writes its attempts and outcome, each write conditional on its election key and on the
 * request as it read it. Part of {@link ClusterVolumes}. Thread-safe.
 */
public interface ProvisioningRequests extends ControllerElection {
  /**
   * The controller plugins of this id in the catalog, one per registration (any node, healthy or not): which
   * agent could act on its requests.
   */
  List<CatalogEntry> controllersOf(String pluginId);

  /**
   * Asks for a create ({@link ClusterVolumeRequest#create}): written if the name has no request; the stored one if
   * it asks the same (pending, or done already: a create is idempotent by name); a failed one is replaced (asked
   * again).
   *
   * @return the request as stored now
   * @throws VolumeStateException if a pending or done create of the name asks for something else
   */
  ClusterVolumeRequest requestCreate(ClusterVolumeRequest request) throws VolumeStateException;

  /**
   * Asks for a delete ({@link ClusterVolumeRequest#delete}) of a registered volume, in one transaction that checks
   * it has no claim and no attachment; from then on, no claim of it is granted. A failed delete is asked again; a
   * pending one is returned as it stands.
   *
   * @return the request as stored now, or empty if the volume is not registered
   * @throws VolumeStateException while the volume has claims or attachments, naming them
   */
  Optional<ClusterVolumeRequest> requestDelete(ClusterVolumeRequest request) throws VolumeStateException;

  /** One request, if there is one. */
  Optional<ClusterVolumeRequest> request(ClusterVolumeRequest.Kind kind, String pluginId, String name);

  /**
   * Removes a request that is not done (pending or failed): the asker gives up. A create already sent may still
   * make its volume in the plugin (not registered then; a create of the same name asked again finds it).
   *
   * @return false if there was none, or it is done
   */
  boolean withdraw(ClusterVolumeRequest.Kind kind, String pluginId, String name);

  /**
   * As the plugin id's controller agent: writes {@code to} over {@code from}, only if {@code from} is unchanged
   * (its {@link ClusterVolumeRequest#revision()}) and {@code leadership} is held; a delete only while its volume
   * has no claim and no attachment.
   *
   * @return {@code to} as stored (with its new revision), or empty if nothing was written
   */
  Optional<ClusterVolumeRequest> updateRequest(Leadership leadership, ClusterVolumeRequest from,
      ClusterVolumeRequest to);

  /**
   * As the controller agent, after CreateVolume answered: the volume written under {@code volumes/} and the request
   * done, in one transaction (conditional as {@link #updateRequest}).
   *
   * @return false if nothing was written (leadership gone or the request changed)
   * @throws VolumeStateException if the volume id is registered already with other content (nothing written)
   */
  boolean completeCreate(Leadership leadership, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException;

  /**
   * As the controller agent, after DeleteVolume succeeded (or answered NOT_FOUND): the volume's key, the request and
   * the done create that made the volume removed, in one transaction (conditional as {@link #updateRequest}).
   *
   * @return false if nothing was removed (leadership gone or the request changed)
   */
  boolean completeDelete(Leadership leadership, ClusterVolumeRequest request);
}
