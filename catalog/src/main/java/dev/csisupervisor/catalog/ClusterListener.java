package dev.csisupervisor.catalog;

/**
 * Receives a {@link ClusterView}'s changes. Calls for one subscription are never concurrent, run on the
 * executor given to {@link ClusterView#subscribe} and never under the view's lock; a listener that throws is
 * logged and keeps its subscription.
 */
public interface ClusterListener {

  /** The next change: its sequence is exactly one more than the previous one's (or the snapshot's). */
  void onEvent(ClusterEvent event);

  /** This subscriber fell more than the view's backlog bound behind and was dropped; {@link #onClosed()} follows. */
  default void onLagged(long lastDeliveredSequence) {}

  /** The last call, exactly once: after a lag, the subscription's close or the view's close. */
  default void onClosed() {}
}
