package dev.csisupervisor.supervisor;

import java.time.Duration;

/**
 * Sees every probe a supervisor makes, for metrics. Called on the supervisor's scheduler threads
 * after each probe completes; must be cheap and must not block.
 */
@FunctionalInterface
public interface ProbeObserver {
  /**
   * @param pluginId the plugin probed
   * @param latency  from sending the probe to its answer (or failure)
   * @param ready    whether the plugin answered ready
   * @param error    why the probe failed, or {@code ""} if it got an answer
   */
  void probed(String pluginId, Duration latency, boolean ready, String error);

  static ProbeObserver none() {
    return (pluginId, latency, ready, error) -> {};
  }
}
