package dev.csisupervisor.registry;

/**
 * Receives one plugin type's events. Calls for one subscription are never concurrent and always run on the
 * executor given to {@link PluginRegistry#subscribe}, never under a registry lock. A listener that throws
 * is logged and keeps its subscription.
 */
public interface PluginListener {

  /** The next event: its sequence is exactly one more than the previous event's (or the snapshot's). */
  void onEvent(PluginEvent event);

  /**
   * This subscriber fell more than the registry's backlog bound behind and was dropped; events after
   * {@code lastDeliveredSequence} were NOT delivered. {@link #onClosed()} follows. Re-subscribe for a new
   * snapshot.
   */
  default void onLagged(long lastDeliveredSequence) {}

  /** The last call for this subscription, exactly once: after a lag, its own close, or the registry's close. */
  default void onClosed() {}
}
