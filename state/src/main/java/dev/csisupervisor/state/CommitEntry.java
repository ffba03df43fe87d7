package dev.csisupervisor.state;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;

/**
 * What waits in {@link GroupCommitStore}'s queue: plain changes ({@link Changes}, a caller waiting or a future) or
 * a lane's request ({@link LaneRequest}). The fields a commit sets are guarded by the group commit's lock.
 */
abstract class CommitEntry {
  boolean done; // guarded by the committer's lock
  Throwable failure; // set by the committer before done
  /** Where its caller waits (null for an asynchronous change): signalled when done or handed the turn. */
  Condition wake; // guarded by the committer's lock
  boolean leads; // guarded by the committer's lock: handed the turn by the commit before, not done yet

  /** Changes given as they are: {@link GroupCommitStore#apply} (a caller waits) or {@code applyAsync}. */
  static final class Changes extends CommitEntry {
    final List<StateChange> changes;
    final CompletableFuture<Void> future; // null: a caller waits

    Changes(List<StateChange> changes, CompletableFuture<Void> future) {
      this.changes = changes;
      this.future = future;
    }
  }

  /** A request of a {@link CommitLane}, whose changes the lane prepares on the committing thread. */
  static final class LaneRequest<Q> extends CommitEntry {
    final CommitLane<Q> lane;
    final Q request;
    AfterCommit afterCommit; // set by the committer before done

    LaneRequest(CommitLane<Q> lane, Q request) {
      this.lane = lane;
      this.request = request;
    }

    void runAfterCommit() {
      if (afterCommit != null) {
        afterCommit.runOnce();
      }
    }
  }

  /** A lane batch's follow-up ({@link CommitLane.Prepared#committed()}), run by the first of its callers to wake. */
  static final class AfterCommit {
    private final Runnable task;
    private final AtomicBoolean ran = new AtomicBoolean();

    AfterCommit(Runnable task) {
      this.task = task;
    }

    void runOnce() {
      if (ran.compareAndSet(false, true)) {
        task.run();
      }
    }
  }
}
