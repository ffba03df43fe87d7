package dev.csisupervisor.client;

import java.util.Objects;
import java.util.Optional;

/**
 * {@code ListSnapshots}' request: one page, optionally only the snapshots of one volume or the one snapshot of an id.
 *
 * @param maxEntries the most entries to answer; 0: as many as the plugin likes
 * @param startingToken the {@link SnapshotPage#nextToken()} of the page before; empty: the first page
 * @param sourceVolumeId only the snapshots of this volume; empty: any
 * @param snapshotId only the snapshot of this id; empty: any
 * @param secrets {@code LIST_SNAPSHOTS} secrets; never shown
 */
public record ListSnapshotsRequest(int maxEntries, Optional<String> startingToken, Optional<String> sourceVolumeId,
    Optional<String> snapshotId, Secrets secrets) {
  public ListSnapshotsRequest {
    ControllerArguments.paging(maxEntries, startingToken);
    requireNonBlank(sourceVolumeId, "sourceVolumeId");
    requireNonBlank(snapshotId, "snapshotId");
    Objects.requireNonNull(secrets, "secrets");
  }

  /** Every snapshot, first page, as many as the plugin likes. */
  public static ListSnapshotsRequest all() {
    return new ListSnapshotsRequest(0, Optional.empty(), Optional.empty(), Optional.empty(), Secrets.none());
  }

  private static void requireNonBlank(Optional<String> value, String field) {
    Objects.requireNonNull(value, field);
    value.ifPresent(v -> dev.csisupervisor.common.Values.requireNonBlank(v, field));
  }
}
