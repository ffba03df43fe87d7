package dev.csisupervisor.state;

import dev.csisupervisor.common.Bounds;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * A {@link StateStore} in memory, for tests and for agents that do not need to survive a restart.
 *
 * <p>Thread-safe: every call holds the store's monitor, so commits are serialized exactly like the file
 * store's. For tests it can fail the next commits ({@link #failNextCommits(int)}), run a hook just before a
 * commit lands ({@link #beforeCommit(Consumer)}, e.g. to block a committer and let others pile up), and
 * count commits ({@link #commitCount()}). A call that changes nothing (deleting an unknown key, an empty
 * {@code apply}) is not a commit: it consumes no injected failure and does not run the hook.
 */
public final class InMemoryStateStore implements StateStore {

  private final Map<String, byte[]> records = new HashMap<>();
  private int failuresToInject;
  private long commits;
  private volatile Consumer<List<StateChange>> beforeCommit = changes -> {};
  private boolean closed;

  public InMemoryStateStore() {}

  /** Makes the next {@code count} commits throw {@link StateStoreException} without changing anything. */
  public synchronized void failNextCommits(int count) {
    Bounds.atLeast(count, 0, "count");
    failuresToInject = count;
  }

  /**
   * Runs {@code hook} with the changes of every commit before it lands (and before an injected failure is
   * decided). The hook runs on the committing thread WITHOUT the store's monitor held, so other threads can
   * keep calling the store while it blocks. Throwing from the hook fails that commit.
   */
  public void beforeCommit(Consumer<List<StateChange>> hook) {
    beforeCommit = Objects.requireNonNull(hook, "hook");
  }

  /** The number of commits that landed so far. */
  public synchronized long commitCount() {
    return commits;
  }

  @Override
  public void put(String key, byte[] value) {
    Keys.checkValue(Keys.check(key), value);
    commit(List.of(new StateChange.Put(key, value)));
  }

  @Override
  public void delete(String key) {
    Keys.check(key);
    synchronized (this) {
      ensureOpen();
      if (!records.containsKey(key)) {
        return;
      }
    }
    commit(List.of(new StateChange.Delete(key)));
  }

  @Override
  public synchronized Optional<byte[]> get(String key) {
    Keys.check(key);
    ensureOpen();
    byte[] value = records.get(key);
    return value == null ? Optional.empty() : Optional.of(value.clone());
  }

  @Override
  public synchronized Map<String, byte[]> loadAll() {
    ensureOpen();
    Map<String, byte[]> copy = new HashMap<>();
    records.forEach((k, v) -> copy.put(k, v.clone()));
    return copy;
  }

  @Override
  public void apply(List<StateChange> changes) {
    Keys.checkChanges(changes);
    if (changes.isEmpty()) {
      return;
    }
    commit(List.copyOf(changes));
  }

  private void commit(List<StateChange> changes) {
    synchronized (this) {
      ensureOpen();
    }
    try {
      beforeCommit.accept(changes);
    } catch (RuntimeException e) {
      throw new StateStoreException("commit of " + changes.size() + " change(s) failed in beforeCommit hook", e);
    }
    synchronized (this) {
      ensureOpen();
      if (failuresToInject > 0) {
        failuresToInject--;
        throw new StateStoreException("injected commit failure (" + changes.size() + " change(s) not applied)");
      }
      for (StateChange change : changes) {
        if (change instanceof StateChange.Put put) {
          records.put(put.key(), put.valueUnsafe().clone());
        } else {
          records.remove(change.key());
        }
      }
      commits++;
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("state store is closed");
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
  }

  @Override
  public String toString() {
    return "InMemoryStateStore";
  }
}
