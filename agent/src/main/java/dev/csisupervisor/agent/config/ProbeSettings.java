package dev.csisupervisor.agent.config;

import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How the supervisor probes one plugin.
 *
 * @param healthTimeout  how long a (re)started plugin may take to become ready before the agent
 *                       restarts it; {@link Duration#ZERO} waits forever
 * @param probeInterval  the steady-state probe interval once registered
 * @param probeTimeout   the deadline of each probe and fingerprint call
 * @param initialBackoff the first retry delay while waiting for ready (doubles each time)
 * @param maxBackoff     the cap of that retry delay
 */
public record ProbeSettings(Duration healthTimeout, Duration probeInterval, Duration probeTimeout,
    Duration initialBackoff, Duration maxBackoff) {

  /**
   * The supervisor's defaults ({@link CsiPluginConfig}): 30 s to become ready, a probe every 30 s
   * (as Nomad's CSI plugin health check) with a 5 s deadline, backoff from 50 ms to 5 s.
   */
  public static final ProbeSettings DEFAULT = new ProbeSettings(
      CsiPluginConfig.DEFAULT_HEALTH_TIMEOUT, CsiPluginConfig.DEFAULT_PROBE_INTERVAL,
      CsiPluginConfig.DEFAULT_PROBE_TIMEOUT, CsiPluginConfig.DEFAULT_INITIAL_BACKOFF,
      CsiPluginConfig.DEFAULT_MAX_BACKOFF);

  public ProbeSettings {
    CsiPluginConfig.checkProbeTiming(healthTimeout, probeInterval, probeTimeout, initialBackoff, maxBackoff);
  }

  /** The supervisor's config for plugin {@code id} of {@code kind} probed this way ({@code externalSocket} may be null). */
  public CsiPluginConfig supervisorConfig(String id, PluginKind kind, Path externalSocket) {
    return CsiPluginConfig.builder(id, kind)
        .healthTimeout(healthTimeout)
        .probeInterval(probeInterval)
        .probeTimeout(probeTimeout)
        .initialBackoff(initialBackoff)
        .maxBackoff(maxBackoff)
        .externalSocket(externalSocket)
        .build();
  }
}
