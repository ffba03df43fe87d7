package dev.csisupervisor.registry;

import dev.csisupervisor.state.ForwardingStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Wraps any {@link StateStore}: records every commit's changes, can fail the next commits, and runs a hook
 * before each commit. Lets the same tests inject faults into the in-memory and the MapDB store.
 */
final class RecordingStore extends ForwardingStateStore {
  private final List<List<StateChange>> commits = new ArrayList<>();
  private int failures;
  private volatile Consumer<List<StateChange>> beforeCommit = c -> {};

  RecordingStore(StateStore delegate) {
    super(delegate);
  }

  /** The store underneath, to reopen it. */
  StateStore wrapped() {
    return delegate();
  }

  synchronized void failNextCommits(int n) {
    failures = n;
  }

  void beforeCommit(Consumer<List<StateChange>> hook) {
    beforeCommit = hook;
  }

  synchronized List<List<StateChange>> commits() {
    return List.copyOf(commits);
  }

  private void commit(List<StateChange> changes, Runnable action) {
    beforeCommit.accept(changes);
    synchronized (this) {
      if (failures > 0) {
        failures--;
        throw new StateStoreException("injected failure of a commit of " + changes.size() + " change(s)");
      }
      action.run();
      commits.add(List.copyOf(changes));
    }
  }

  @Override
  public void put(String key, byte[] value) {
    commit(List.of(new StateChange.Put(key, value)), () -> delegate().put(key, value));
  }

  @Override
  public void delete(String key) {
    commit(List.of(new StateChange.Delete(key)), () -> delegate().delete(key));
  }

  @Override
  public void apply(List<StateChange> changes) {
    if (changes.isEmpty()) {
      delegate().apply(changes);
      return;
    }
    commit(changes, () -> delegate().apply(changes));
  }
}
