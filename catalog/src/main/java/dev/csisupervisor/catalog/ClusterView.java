package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * A watched, in-memory aggregate of the catalog under one prefix: every node and registration, per plugin
 * name the controllers and nodes healthy / expected ({@link ClusterSnapshot#plugins()}), per node its plugins.
 *
 * <p>{@link #start()} lists the prefix, then watches it from the next revision. After a disconnect the watch
 * resumes from the last revision seen, on the next endpoint; if etcd compacted that revision away the view
 * re-lists and emits the difference, so subscribers stay exact. The watch requires a leader (a member cut off
 * from the quorum ends it), and a quiet one is asked for progress every request timeout: a member that does
 * not answer within another is left for the next ({@link #freshness()} says how current the view is). Changes reach subscribers in order, numbered without gaps, each on
 * its own executor with its own bounded queue: a slow or throwing subscriber never holds up the view or the
 * others (one past the bound gets {@link ClusterListener#onLagged}).
 *
 * <p>Thread-safe. Reads answer from memory.
 */
public interface ClusterView extends AutoCloseable {

  static Builder builder() {
    return new Builder();
  }

  /**
   * Reads the catalog once (one consistent list at a single revision, each member tried in turn), without
   * watching: for the CLI.
   *
   * @throws EtcdException if etcd cannot be read
   */
  static ClusterSnapshot read(EtcdOptions etcd, String prefix) {
    return CatalogListing.read(etcd, CatalogKeys.of(prefix), false, Clock.systemUTC()).snapshot();
  }

  /**
   * Reads the catalog once, like {@link #read}, each member tried in turn; when none can answer with the
   * quorum's agreement (no quorum), one member's own copy is read instead and marked stale: for an operator
   * who wants to see what there is during an outage.
   *
   * @throws EtcdException if no member can be read at all
   */
  static ClusterRead readAllowingStale(EtcdOptions etcd, String prefix) {
    return CatalogListing.read(etcd, CatalogKeys.of(prefix), true, Clock.systemUTC());
  }

  /**
   * Starts listing and watching in the background; returns at once.
   *
   * @throws IllegalStateException if called twice or after close
   */
  void start();

  /** Waits until the first list has been loaded; false on timeout. */
  boolean awaitSynced(Duration timeout) throws InterruptedException;

  /** The current content (empty before the first list). */
  ClusterSnapshot snapshot();

  /**
   * How current {@link #snapshot()} is: its revision, when etcd last confirmed it, and whether (and since when)
   * the view is stale because its watch is down or unconfirmed (etcd unreachable, without quorum, or the member
   * silent). A stale view keeps answering from what it had.
   */
  ViewFreshness freshness();

  /**
   * Subscribes: the returned subscription holds the snapshot, and {@code listener} gets every later change on
   * {@code executor}, in order, exactly once.
   *
   * @throws IllegalStateException if the view is closed
   */
  ClusterSubscription subscribe(ClusterListener listener, Executor executor);

  /** Stops watching and ends every subscription with {@code onClosed()}. Idempotent. */
  @Override
  void close();

  /** Builds a {@link ClusterView}. Not thread-safe. */
  final class Builder extends EtcdClientSettings<Builder> {
    int maxSubscriberBacklog = 100_000;
    Clock clock = Clock.systemUTC();

    Builder() {}

    @Override
    Builder self() {
      return this;
    }

    /** How many undelivered changes a subscriber may queue before it is dropped as lagged (default 100,000). */
    public Builder maxSubscriberBacklog(int max) {
      this.maxSubscriberBacklog = Bounds.atLeast(max, 1, "maxSubscriberBacklog");
      return this;
    }

    /** The wall clock of {@link ViewFreshness} times (default UTC system clock). */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** @throws IllegalStateException if etcd is not set */
    public ClusterView build() {
      if (etcd == null) {
        throw new IllegalStateException("etcd is required");
      }
      return new EtcdClusterView(this);
    }
  }
}
