package dev.csisupervisor.volumes;

import java.time.Duration;

/**
 * Told of every CSI call the manager makes, for metrics. Called on the thread that saw the call
 * end (a gRPC I/O thread): must be quick and must not throw.
 */
@FunctionalInterface
public interface VolumeObserver {
  /** Does nothing. */
  VolumeObserver NONE = (rpc, code, latency) -> {};

  /**
   * @param rpc the CSI RPC's short name ({@code NodeStageVolume})
   * @param code {@code OK}, the plugin's status code, or the client's failure kind
   *     ({@code DEADLINE_EXCEEDED}, {@code CONNECTION_REFUSED}, ...)
   * @param latency how long the call took
   */
  void rpcDone(String rpc, String code, Duration latency);
}
