package dev.csisupervisor.catalog;

import java.util.Objects;

/**
 * One read of the catalog ({@link ClusterView#readAllowingStale}): what was read and how current it is.
 *
 * @param snapshot the catalog as read
 * @param freshness its revision, the member read from, and whether it is stale (one member's own copy)
 */
public record ClusterRead(ClusterSnapshot snapshot, ViewFreshness freshness) {

  public ClusterRead {
    Objects.requireNonNull(snapshot, "snapshot");
    Objects.requireNonNull(freshness, "freshness");
  }
}
