package dev.csisupervisor.benchmarks;

import dev.csisupervisor.state.ForwardingStateStore;
import dev.csisupervisor.state.StateChange;
import dev.csisupervisor.state.StateStore;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link StateStore} decorator that notes when each commit started and ended ({@link System#nanoTime()}), to lay
 * one operation's commits on a timeline beside its other steps. Thread-safe (as the delegate).
 */
final class TimelineStore extends ForwardingStateStore {
  /** One commit: when {@code apply} was entered and when it returned. */
  record Commit(long start, long end) {}

  private final List<Commit> commits = new ArrayList<>();

  TimelineStore(StateStore delegate) {
    super(delegate);
  }

  /** The commits noted since the last call, oldest first; forgets them. */
  synchronized List<Commit> take() {
    List<Commit> out = List.copyOf(commits);
    commits.clear();
    return out;
  }

  @Override
  public void put(String key, byte[] value) {
    noted(() -> super.put(key, value));
  }

  @Override
  public void delete(String key) {
    noted(() -> super.delete(key));
  }

  @Override
  public void apply(List<StateChange> list) {
    noted(() -> super.apply(list));
  }

  private void noted(Runnable commit) {
    long start = System.nanoTime();
    commit.run();
    long end = System.nanoTime();
    synchronized (this) {
      commits.add(new Commit(start, end));
    }
  }
}
