package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A {@link StateStore} that times its commits into {@link AgentMetrics}. Thread-safe as the
 * store it wraps.
 */
public final class TimedStateStore implements StateStore {
  private final StateStore delegate;
  private final AgentMetrics metrics;

  public TimedStateStore(StateStore delegate, AgentMetrics metrics) {
    this.delegate = requireNonNull(delegate, "delegate");
    this.metrics = requireNonNull(metrics, "metrics");
  }

  @Override
  public void put(String key, byte[] value) {
    metrics.timeCommit("put", () -> {
      delegate.put(key, value);
      return null;
    });
  }

  @Override
  public void delete(String key) {
    metrics.timeCommit("delete", () -> {
      delegate.delete(key);
      return null;
    });
  }

  @Override
  public Optional<byte[]> get(String key) {
    return delegate.get(key);
  }

  @Override
  public Map<String, byte[]> loadAll() {
    return delegate.loadAll();
  }

  @Override
  public void apply(List<StateChange> changes) {
    metrics.timeCommit("apply", () -> {
      delegate.apply(changes);
      return null;
    });
  }

  @Override
  public void close() {
    delegate.close();
  }
}
