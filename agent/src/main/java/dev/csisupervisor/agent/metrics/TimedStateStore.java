package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.state.ForwardingStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.util.List;

/**
 * A {@link StateStore} that times its commits into {@link AgentMetrics}. Thread-safe as the
 * store it wraps.
 */
public final class TimedStateStore extends ForwardingStateStore {
  private final AgentMetrics metrics;

  public TimedStateStore(StateStore delegate, AgentMetrics metrics) {
    super(delegate);
    this.metrics = requireNonNull(metrics, "metrics");
  }

  @Override
  public void put(String key, byte[] value) {
    metrics.timeCommit("put", () -> {
      super.put(key, value);
      return null;
    });
  }

  @Override
  public void delete(String key) {
    metrics.timeCommit("delete", () -> {
      super.delete(key);
      return null;
    });
  }

  @Override
  public void apply(List<StateChange> changes) {
    metrics.timeCommit("apply", () -> {
      super.apply(changes);
      return null;
    });
  }
}
