package dev.csisupervisor.benchmarks;

import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

/**
 * A {@link StateStore} decorator that counts commits and the changes in them, to show how well the
 * registry's group commit batches concurrent writers. Thread-safe (as the delegate).
 */
final class CountingStateStore implements StateStore {
  private final StateStore delegate;
  private final LongAdder commits = new LongAdder();
  private final LongAdder changes = new LongAdder();

  CountingStateStore(StateStore delegate) {
    this.delegate = delegate;
  }

  long commits() {
    return commits.sum();
  }

  long changes() {
    return changes.sum();
  }

  void reset() {
    commits.reset();
    changes.reset();
  }

  @Override
  public void put(String key, byte[] value) {
    delegate.put(key, value);
    commits.increment();
    changes.increment();
  }

  @Override
  public void delete(String key) {
    delegate.delete(key);
    commits.increment();
    changes.increment();
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
  public void apply(List<StateChange> list) {
    delegate.apply(list);
    if (!list.isEmpty()) {
      commits.increment();
      changes.add(list.size());
    }
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public String toString() {
    return "Counting[" + delegate + "]";
  }
}
