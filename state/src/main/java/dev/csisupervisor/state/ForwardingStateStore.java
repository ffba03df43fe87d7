package dev.csisupervisor.state;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A {@link StateStore} that forwards every call to another one; decorators (timing, counting,
 * fault injection) override only what they add to. Thread-safe as the delegate.
 */
public abstract class ForwardingStateStore implements StateStore {
  private final StateStore delegate;

  protected ForwardingStateStore(StateStore delegate) {
    this.delegate = requireNonNull(delegate, "delegate");
  }

  /** The store calls are forwarded to. */
  protected final StateStore delegate() {
    return delegate;
  }

  @Override
  public void put(String key, byte[] value) {
    delegate.put(key, value);
  }

  @Override
  public void delete(String key) {
    delegate.delete(key);
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
  public Map<String, byte[]> loadAll(String prefix) {
    return delegate.loadAll(prefix);
  }

  @Override
  public void apply(List<StateChange> changes) {
    delegate.apply(changes);
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + delegate + "]";
  }
}
