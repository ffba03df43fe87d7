package dev.csisupervisor.registry;

import java.util.List;

/**
 * A live subscription to one plugin type: the snapshot it started from and, through its listener, every later
 * event exactly once and in order. Thread-safe.
 */
public interface Subscription extends AutoCloseable {

  /**
   * Every registration of the type (all instances, oldest registration first) at the moment of subscribing.
   * Applying the events in order to it gives the registry's current content.
   */
  List<PluginInfo> snapshot();

  /** The sequence of the last event included in {@link #snapshot()} (0 if none); the first event has this + 1. */
  long snapshotSequence();

  /** False once the subscription was closed, lagged, or the registry closed. */
  boolean isActive();

  /**
   * Stops delivery: no {@code onEvent} begins after this returns (a call already running on another thread is
   * waited for, within the registry's close timeout). The listener then gets {@code onClosed()} on its executor.
   * Idempotent; may be called from inside the listener.
   */
  @Override
  void close();
}
