package dev.csisupervisor.benchmarks;

import dev.csisupervisor.state.ForwardingStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

/**
 * A {@link StateStore} decorator that counts commits and the changes in them, to show how well the
 * registry's group commit batches concurrent writers. Thread-safe (as the delegate).
 */
final class CountingStateStore extends ForwardingStateStore {
  private final LongAdder commits = new LongAdder();
  private final LongAdder changes = new LongAdder();

  CountingStateStore(StateStore delegate) {
    super(delegate);
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
    super.put(key, value);
    commits.increment();
    changes.increment();
  }

  @Override
  public void delete(String key) {
    super.delete(key);
    commits.increment();
    changes.increment();
  }

  @Override
  public void apply(List<StateChange> list) {
    super.apply(list);
    if (!list.isEmpty()) {
      commits.increment();
      changes.add(list.size());
    }
  }
}
