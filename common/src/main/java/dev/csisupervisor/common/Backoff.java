package dev.csisupervisor.common;

import java.time.Duration;

/** A retry policy: how long to wait before the next attempt. Not thread-safe; one per loop. */
public interface Backoff {
  /** The delay before the next attempt; each call advances the policy. */
  Duration next();

  /** Back to the first delay, after a success. */
  void reset();
}
