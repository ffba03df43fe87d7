package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * How current a {@link ClusterView} (or a one-time read of the catalog) is: the etcd revision it reflects and
 * when etcd last confirmed it (a list, a watch event, or the answer to a watch progress request). A view is
 * <em>stale</em> while its watch is down (etcd unreachable, no quorum, the member silent) or unconfirmed for
 * longer than its staleness bound; it then still answers, from what it had at {@code lastConfirmed}. A one-time
 * read is stale when no member could answer with the quorum's agreement and one member's own copy was read
 * instead. Immutable.
 *
 * @param revision the etcd revision reflected (0 before the first list)
 * @param lastConfirmed when etcd last confirmed it current; null if never (before the first list, or a stale read)
 * @param stale whether it may be out of date
 * @param staleSince when stale: since when, its last confirmation (or the view's start if it never had one);
 *     null when fresh or unknown (a stale one-time read)
 * @param endpoint the etcd member read from
 * @param lastError the last etcd failure's message, {@code ""} if none yet
 */
public record ViewFreshness(long revision, Instant lastConfirmed, boolean stale, Instant staleSince, String endpoint,
    String lastError) {

  public ViewFreshness {
    Bounds.atLeast(revision, 0, "revision");
    if (staleSince != null && !stale) {
      throw new IllegalArgumentException("staleSince must be null when not stale, got " + staleSince);
    }
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(lastError, "lastError");
  }

  /** Time since the last confirmation as of {@code now}; null if there was none. */
  public Duration age(Instant now) {
    if (lastConfirmed == null) {
      return null;
    }
    Duration d = Duration.between(lastConfirmed, now);
    return d.isNegative() ? Duration.ZERO : d;
  }
}
