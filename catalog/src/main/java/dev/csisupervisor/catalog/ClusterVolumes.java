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

  /** Deletes one claim whatever its revision (an operator's tool); false if there was none. */
  boolean release(String pluginId, String volumeId, String nodeId, String allocId);

  /**
   * Deletes the claim as {@code claim} read or took it: only if its key's mod revision is still
   * {@link ClusterClaim#revision()} (0: whatever it is), so a release never removes a newer claim of the same
   * allocation (taken again meanwhile). To be called once the allocation is unmounted and, if it was the node's
   * last use, the volume unstaged on its node.
   *
   * @return false if there was no such claim (released already, or taken again since)
   */
  boolean release(ClusterClaim claim);

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
   * Whether the plugin id's controller offers {@code PUBLISH_UNPUBLISH_VOLUME} (then a node's claim waits for its
   * attachment): as its controller agent last remembered it ({@link #rememberCapabilities}), which stays while no
   * controller runs; before any agent ever led the id, as any controller plugin of the id in the catalog says.
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
   * How long {@code l} is sure to be held, as far as this agent knows: until its election lease could expire
   * (the send time of the last keep-alive etcd answered, plus the TTL). Zero once the lease is lost. A controller
   * call ends before this (DESIGN.md "One acting controller").
   */
  java.time.Duration leadershipLeft(Leadership l);

  /** Calls {@code lost} (on a timer thread; it must return at once) each time the election lease is lost. */
  void onLeaseLost(Runnable lost);

  /**
   * As the controller agent: the attachment's intent ({@link ClusterAttachment.State#ATTACHING}), written before
   * ControllerPublishVolume, only while there is no attachment and the node claims the volume.
   *
   * @return the intent as stored (with its revision), or empty if nothing was written
   */
  Optional<ClusterAttachment> intendAttach(Leadership l, ClusterAttachment attaching);

  /**
   * As the controller agent: {@code to} over {@code from}, only if {@code from} is unchanged (its revision).
   *
   * @return {@code to} as stored, or empty if nothing was written
   */
  Optional<ClusterAttachment> updateAttachment(Leadership l, ClusterAttachment from, ClusterAttachment to);

  /**
   * As the controller agent: {@link ClusterAttachment.State#DETACHING}, only if {@code a} is unchanged and the node
   * has no claim of the volume left: from then on the node waits for a new attachment.
   *
   * @return the DETACHING attachment as stored, or empty if nothing was written
   */
  Optional<ClusterAttachment> markDetaching(Leadership l, ClusterAttachment a);

  /** As the controller agent, after ControllerUnpublishVolume succeeded: deletes {@code a} if unchanged. */
  boolean deleteAttachment(Leadership l, ClusterAttachment a);

  /**
   * The fence's first step, as the controller agent: {@code a} DETACHING, only while its node is lost (no node key,
   * no clean-stop marker) and {@code a} is unchanged.
   */
  Optional<ClusterAttachment> beginFence(Leadership l, ClusterAttachment a);

  /**
   * The fence's last step, after its unpublish (or with no attachment): the lost node's claims of the volume and the
   * attachment deleted, in one transaction that checks the node is still lost, the attachment is {@code a} as read
   * (or absent) and no claim of the node was put after {@code revision} (the snapshot the fence decided on).
   *
   * @return false if nothing was deleted (the node came back, a claim came, the attachment changed)
   */
  boolean completeFence(Leadership l, String pluginId, String volumeId, String nodeId, Optional<ClusterAttachment> a,
      long revision);

  /** As the controller agent: remembers the plugin id's controller capabilities (see {@link #controllerPublishes}). */
  void rememberCapabilities(Leadership l, java.util.Set<String> controllerCapabilities);

  /**
   * This agent stops cleanly and keeps its mounts: it is marked so (a key on no lease), and is not taken for a lost
   * node, nor ever fenced automatically, until it runs again ({@link #clearStopped}).
   */
  void markStopped();

  /** This agent runs: its clean-stop marker, if any, goes. */
  void clearStopped();

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
   * @param leaseId the election lease it is held on
   */
  record Leadership(String pluginId, String nodeId, long createRevision, long leaseId) {}

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
