package dev.csisupervisor.volumes;

import java.util.concurrent.CompletableFuture;

/**
 * The volume manager's one way to change a record: {@code next} made durable as {@code key}'s record
 * ({@code null} or empty: deleted), then made the record in memory. {@code previous} is what memory holds now.
 * The future completes on the state store's commit-callbacks thread (or fails with a
 * {@link VolumeException} of reason {@code STATE_ERROR}: then nothing changed).
 */
@FunctionalInterface
interface RecordCommit {
  CompletableFuture<VolumeRecord> commit(VolumeKey key, VolumeRecord previous, VolumeRecord next);
}
