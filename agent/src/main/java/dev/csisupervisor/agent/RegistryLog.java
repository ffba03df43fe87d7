package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Logs and counts the registry's events, one line each. */
final class RegistryLog implements PluginListener {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private final AgentMetrics metrics;

  RegistryLog(AgentMetrics metrics) {
    this.metrics = requireNonNull(metrics, "metrics");
  }

  @Override
  public void onEvent(PluginEvent e) {
    metrics.registryEvent(e);
    log.info("registry {} plugin={} type={} alloc={} version={} healthy={} seq={}", e.kind(),
        e.plugin().name(), e.type().label(), e.plugin().allocId(), e.plugin().version(),
        e.plugin().health().healthy(), e.sequence());
  }

  @Override
  public void onLagged(long lastDeliveredSequence) {
    log.warn("registry event log lagged after sequence {}", lastDeliveredSequence);
  }
}
