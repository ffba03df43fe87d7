package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;

/**
 * A point-in-time view of a {@link CatalogPublisher}, for metrics and status output.
 *
 * @param connected whether the node's lease is alive and the catalog is in sync modulo the backlog
 * @param endpoint the etcd member requests go to now ({@code http://host:port})
 * @param leaseId the node's current lease (0 while none)
 * @param leaseTtlLeft the lease's time to live as of its last keep-alive answer, less the time since
 *     ({@code ZERO} while there is no lease or no answer)
 * @param backlog keys changed locally and not yet written to etcd (coalesced: one per key)
 * @param oldestPending how long the oldest of those has been waiting ({@code ZERO} if none)
 * @param lastPublishLag for the last write: time from the local change (the registry event's time) to etcd's
 *     acknowledgement
 * @param published keys written or deleted in etcd since start
 * @param etcdErrors failed etcd requests since start (each one a backoff step)
 * @param reconciles full reconciliations (start, every reconnect, backlog overflow, a lagged subscription)
 * @param overflows times the backlog bound was hit (the backlog was dropped and a reconcile scheduled)
 * @param lastError the last etcd error's message, {@code ""} if none yet
 */
public record PublisherStatus(
    boolean connected,
    String endpoint,
    long leaseId,
    Duration leaseTtlLeft,
    int backlog,
    Duration oldestPending,
    Duration lastPublishLag,
    long published,
    long etcdErrors,
    long reconciles,
    long overflows,
    String lastError) {

  public PublisherStatus {
    if (endpoint == null) {
      throw new IllegalArgumentException("endpoint must not be null");
    }
    Bounds.notNegative(leaseTtlLeft, "leaseTtlLeft");
    Bounds.atLeast(backlog, 0, "backlog");
    Bounds.notNegative(oldestPending, "oldestPending");
    Bounds.notNegative(lastPublishLag, "lastPublishLag");
    if (lastError == null) {
      throw new IllegalArgumentException("lastError must not be null");
    }
  }
}
