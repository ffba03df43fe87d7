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

  /**
   * Asks a create, snapshot, modify or register ({@link ClusterVolumeRequest#snapshot}, {@link
   * ClusterVolumeRequest#modify}, {@link ClusterVolumeRequest#register}), in one transaction that checks what it acts
   * on: a snapshot's or a clone's source volume registered and not being deleted, a restore's snapshot recorded and
   * not being deleted, a modify's volume registered, a register's not. The stored one if it asks the same; a failed,
   * cancelled or spent one is asked again.
   *
   * @return the request as stored now
   * @throws VolumeStateException naming what stands in the way (one modify per volume at a time)
   */
  ClusterVolumeRequest ask(ClusterVolumeRequest request) throws VolumeStateException;

  /**
   * Asks a snapshot's delete ({@link ClusterVolumeRequest#deleteSnapshot}), only while no pending create is made from
   * it and it is not still being cut.
   *
   * @return the request as stored now, or empty if the snapshot is not recorded
   * @throws VolumeStateException naming the creates from it, or the snapshot request still cutting it
   */
  Optional<ClusterVolumeRequest> requestSnapshotDelete(ClusterVolumeRequest request) throws VolumeStateException;

  /** A recorded snapshot, if there is one (read from etcd). */
  Optional<ClusterVolumeSnapshot> snapshot(String pluginId, String snapshotId);

  /**
   * As the controller agent, after CreateSnapshot answered: the snapshot recorded and the request written as {@code
   * to}, in one transaction (conditional as {@link #updateRequest}).
   */
  Optional<ClusterVolumeRequest> recordSnapshot(Leadership leadership, ClusterVolumeRequest request,
      ClusterVolumeSnapshot snapshot, ClusterVolumeRequest to);

  /** As the controller agent, after DeleteSnapshot succeeded: the record and the requests of the snapshot removed. */
  boolean completeSnapshotDelete(Leadership leadership, ClusterVolumeRequest request);

  /**
   * As the controller agent, after ControllerModifyVolume succeeded: the request's mutable parameters merged into the
   * volume's record and the request done, in one transaction.
   *
   * @return false if nothing was written (leadership or the request changed, or the volume is gone)
   */
  boolean completeModify(Leadership leadership, ClusterVolumeRequest request);

  /**
   * As the controller agent, once a register is validated (or cannot be): {@code volume} written if not registered
   * and the request done, in one transaction.
   *
   * @throws VolumeStateException if the volume was registered meanwhile
   */
  boolean completeRegister(Leadership leadership, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException;

  /**
   * As the controller agent, once what a cancelled create or snapshot made is deleted: the request removed, with the
   * snapshot's record if one was written.
   */
  boolean completeCancel(Leadership leadership, ClusterVolumeRequest request, Optional<String> madeSnapshot);
}
