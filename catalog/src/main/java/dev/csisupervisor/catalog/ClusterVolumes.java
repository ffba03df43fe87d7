package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Cluster volumes in etcd, beside the catalog: volumes, claims, attachments and the controller election per
 * plugin id (DESIGN.md "Cluster volumes").
 *
 * <p><b>Claims</b> are taken in one transaction that reads every claim of the volume and writes the new one only
 * if none of them changed and none was added in between (a compare of the mod revision over the volume's whole
 * claim range), so of two concurrent single-writer claims exactly one wins, on any node. A claim is not on any
 * lease: it goes only when released.
 *
 * <p><b>Attachments</b> are written by the agent holding the plugin id's election key ({@link #lead}), every
 * write conditional on that key being still its own, so a deposed controller agent can write nothing.
 *
 * <p><b>Create and delete requests</b> ({@link ClusterVolumeRequest}) are desired state: whoever asks writes one
 * ({@link #requestCreate}, {@link #requestDelete}); the controller agent writes its attempts and outcome into it
 * ({@link #updateRequest}, {@link #completeCreate}, {@link #completeDelete}), each write conditional on its
 * election key and on the request being as it read it. A delete is asked only while the volume has no claim and
 * no attachment, and no claim is granted while it is asked.
 *
 * <p>Every call goes to etcd (linearizable) and fails with {@link EtcdException} when no member answers (each
 * endpoint is tried once). Thread-safe.
 */
public interface ClusterVolumes extends AutoCloseable {

  static Builder builder() {
    return new Builder();
  }

  /**
   * Registers a volume (created through a controller, or an existing disk by id).
   *
   * @return true if written, false if the same volume was registered already
   * @throws VolumeStateException if the id is registered with other content
   */
  boolean register(ClusterVolume volume) throws VolumeStateException;

  /**
   * Removes a volume's record.
   *
   * @return false if it was not registered
   * @throws VolumeStateException while it has claims or attachments
   */
  boolean deregister(String pluginId, String volumeId) throws VolumeStateException;

  Optional<ClusterVolume> volume(String pluginId, String volumeId);

  /**
   * Takes a claim (see the class comment). The same allocation's claim again, with the same mode and read-only
   * flag, is granted as it stands.
   *
   * @return the claim as stored
   * @throws ClaimRefusedException naming the reason and, for a conflict, the holder (node, alloc)
   */
  ClusterClaim claim(ClaimRequest request) throws ClaimRefusedException;

  /** Deletes one claim; false if there was none. To be called once the allocation is unmounted on its node. */
  boolean release(String pluginId, String volumeId, String nodeId, String allocId);

  /** Every claim of one volume. */
  List<ClusterClaim> claims(String pluginId, String volumeId);

  /** Every claim held by one node. */
  List<ClusterClaim> claimsOfNode(String nodeId);

  /**
   * The operator's force: deletes every claim of {@code nodeId} (of one volume, if given) and its attachments,
   * without any unpublish. For a node known to be gone (powered off, its disk detached by hand).
   *
   * @return the claims removed
   */
  List<ClusterClaim> forceDetach(String nodeId, Optional<String> pluginId, Optional<String> volumeId);

  Optional<ClusterAttachment> attachment(String pluginId, String volumeId, String nodeId);

  /**
   * Whether a controller plugin of this id in the catalog (any node, healthy or not) offers
   * {@code PUBLISH_UNPUBLISH_VOLUME}: then a node's claim waits for its attachment.
   */
  boolean controllerPublishes(String pluginId);

  /** Everything at one revision. */
  VolumesSnapshot read();

  /**
   * Campaigns for the plugin id's election key on this instance's lease ({@link Builder#leaseTtl}): the key is
   * taken if free, kept if already ours.
   *
   * @return the leadership if this node holds the key now
   */
  Optional<Leadership> lead(String pluginId);

  /** Gives the election key up, if it is ours. */
  void resign(Leadership leadership);

  /**
   * Writes an attachment as the plugin id's controller agent.
   *
   * @return false if {@code leadership} is no longer held (nothing written)
   */
  boolean putAttachment(Leadership leadership, ClusterAttachment attachment);

  /**
   * Marks the attachment {@link ClusterAttachment.State#DETACHING}, only if the node has no claim of the volume
   * left and {@code leadership} is held: from then on the node waits for a new attachment.
   *
   * @return false if a claim exists or the leadership is gone (nothing written)
   */
  boolean markDetaching(Leadership leadership, ClusterAttachment attachment);

  /**
   * Deletes the attachment after its ControllerUnpublishVolume succeeded; with {@code fenceClaims}, also the
   * node's claims of the volume (the node is lost and now fenced: its {@code detach_after} passed).
   *
   * @return false if {@code leadership} is no longer held (nothing deleted)
   */
  boolean deleteAttachment(Leadership leadership, String pluginId, String volumeId, String nodeId, boolean fenceClaims);

  // ---- create and delete requests (desired state; the controller agent acts on them) ----

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
   * Calls {@code changed} (on an etcd client thread; it must return at once) after claims, attachments or requests
   * changed anywhere in the cluster: a hint to read them now rather than at the next timer tick, never a substitute
   * for reading them (a change made while etcd is unreachable is hinted once, after the watch is back, not
   * replayed). Until the returned handle is closed.
   */
  AutoCloseable watchChanges(Runnable changed);

  /** Stops keeping the election lease alive and revokes it. Idempotent. */
  @Override
  void close();

  /**
   * Holding the election key of a plugin id.
   *
   * @param pluginId the plugin id
   * @param nodeId this agent
   * @param createRevision the key's create revision: every write as controller compares it
   */
  record Leadership(String pluginId, String nodeId, long createRevision) {}

  /** Builds {@link ClusterVolumes}. Not thread-safe. */
  final class Builder extends EtcdClientSettings<Builder> {
    String nodeId;
    Duration leaseTtl = Duration.ofSeconds(10);
    Clock clock = Clock.systemUTC();

    Builder() {}

    @Override
    Builder self() {
      return this;
    }

    /** Required: this agent's node id (the writer of claims it takes and of attachments it leads for). */
    public Builder nodeId(String nodeId) {
      this.nodeId = CatalogKeys.checkNodeId(nodeId);
      return this;
    }

    /** The election lease's TTL: how long a dead controller agent holds its plugin ids (default 10 s, at least 2 s). */
    public Builder leaseTtl(Duration ttl) {
      Objects.requireNonNull(ttl, "leaseTtl");
      Bounds.notBelow(ttl, "leaseTtl", Duration.ofSeconds(2), "2 s");
      this.leaseTtl = ttl;
      return this;
    }

    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** @throws IllegalStateException if etcd or the node id is not set */
    public ClusterVolumes build() {
      if (etcd == null || nodeId == null) {
        throw new IllegalStateException("etcd and nodeId are required");
      }
      return new EtcdClusterVolumes(this);
    }
  }
}
