package dev.csisupervisor.catalog;

/** A live subscription to a {@link ClusterView}. Thread-safe. */
public interface ClusterSubscription extends AutoCloseable {

  /** The view when the subscription began; applying the events in order to it gives the view's content. */
  ClusterSnapshot snapshot();

  /** The sequence of the last change included in {@link #snapshot()}; the first event has this + 1. */
  long snapshotSequence();

  boolean isActive();

  /** Stops delivery; the listener then gets {@code onClosed()}. Idempotent. */
  @Override
  void close();
}
