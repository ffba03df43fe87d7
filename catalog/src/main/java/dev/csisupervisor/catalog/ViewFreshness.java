package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * How current a {@link ClusterView} is: the etcd revision it reflects and when etcd last confirmed it (a list,
 * a watch event, or the answer to a watch progress request). A view is <em>stale</em> while its watch is down
 * (etcd unreachable, no quorum, the member silent) or unconfirmed for longer than its staleness bound; it then
 * still answers, from what it had at {@code lastConfirmed}. Immutable.
 *
 * @param revision the etcd revision the view reflects (0 before the first list)
 * @param lastConfirmed when etcd last confirmed the view current; null before the first list
 * @param staleSince null while fresh; else since when the view may be out of date: its last confirmation
 *     (or its start, if it never had one)
 * @param endpoint the etcd member the view reads from now
 * @param lastError the last etcd failure's message, {@code ""} if none yet
 */
public record ViewFreshness(long revision, Instant lastConfirmed, Instant staleSince, String endpoint, String lastError) {

  public ViewFreshness {
    Bounds.atLeast(revision, 0, "revision");
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(lastError, "lastError");
  }

  /** Whether the view may be out of date. */
  public boolean stale() {
    return staleSince != null;
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
