package dev.csisupervisor.catalog;

import java.util.Optional;

/**
 * A claim the cluster refused: the expected outcome of asking for a volume someone else holds, of a node
 * outside the volume's topology, of an unregistered volume, or of a node cut off from etcd. The message says
 * why and, for a conflict, names the holder (node, alloc).
 */
public final class ClaimRefusedException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Why. */
  public enum Reason {
    /** Another claim's access mode does not allow this one: {@link #holder()} says whose. */
    ACCESS_MODE,
    /** The node is not in the volume's accessible topology. */
    TOPOLOGY,
    /** The volume is not registered in the cluster. */
    NOT_REGISTERED,
    /** The volume does not offer the access mode asked for. */
    MODE_NOT_OFFERED,
    /** This allocation already claims the volume with another mode or read-only flag. */
    ALREADY_CLAIMED_OTHERWISE,
    /** A delete of the volume is asked for: no new claim of it. */
    BEING_DELETED,
    /** etcd cannot be reached now: no new claim until it can. */
    ETCD_UNAVAILABLE,
    /**
     * A claim of the volume does not read (a newer version's value, a truncated one, one whose key and value
     * disagree): it is taken to hold the volume, never guessed at, until an operator's force removes it.
     */
    UNREADABLE_CLAIM
  }

  private final Reason reason;
  private final transient ClusterClaim holder;

  public ClaimRefusedException(Reason reason, String message, ClusterClaim holder, Throwable cause) {
    super(message, cause);
    this.reason = reason;
    this.holder = holder;
  }

  public Reason reason() {
    return reason;
  }

  /** The claim in the way, for {@link Reason#ACCESS_MODE} and {@link Reason#ALREADY_CLAIMED_OTHERWISE}. */
  public Optional<ClusterClaim> holder() {
    return Optional.ofNullable(holder);
  }
}
