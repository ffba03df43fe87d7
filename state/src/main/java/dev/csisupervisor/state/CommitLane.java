package dev.csisupervisor.state;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.function.Function;

/**
 * A module's way into the group commit for changes computed against its memory ({@link GroupCommitStore#lane}):
 * the registry's. Requests of one lane go into a batch in arrival order and are prepared together, by one call, on
 * the committing thread right before the write, and told the outcome right after it, before the next batch is
 * prepared; so for that module commit order and memory order are one. Thread-safe.
 *
 * @param <Q> the module's requests; their outcomes are the module's to record (in {@link Prepared})
 */
public final class CommitLane<Q> {
  /**
   * What a lane's requests of one batch became: their changes, and what to do once the commit is known. Both
   * callbacks run on the committing thread before the next batch is prepared, and must not block (nor commit
   * synchronously: refused, it would wait on itself).
   */
  public interface Prepared {
    /** The changes to commit (may be empty: the requests still hear the outcome of the batch they were in). */
    List<StateChange> changes();

    /**
     * The changes are durable. Returns what the lane's callers run once they have woken, outside every lock (the
     * first of them to wake runs it): the registry delivers its events there.
     */
    Runnable committed();

    /** The commit failed; nothing of the batch changed. */
    void failed(Throwable failure);
  }

  private final GroupCommitStore committer;
  private final String name;
  private final Function<List<Q>, Prepared> prepare;

  CommitLane(GroupCommitStore committer, String name, Function<List<Q>, Prepared> prepare) {
    this.committer = committer;
    this.name = name;
    this.prepare = prepare;
  }

  /**
   * Queues {@code request} and returns once its batch is committed (or failed) and the lane was told, having run
   * the batch's {@link Prepared#committed()} follow-up if no caller of the batch did yet. An interrupt does not
   * end the wait (once queued the request may be committed, and the caller must learn the outcome); it is
   * restored. When the store is stopped the lane is prepared and told the failure like a failed commit.
   *
   * @throws IllegalStateException if called in the middle of a commit (on the commit thread, or from a lane's
   *     callback): it would wait on itself
   */
  public void submit(Q request) {
    CommitEntry.LaneRequest<Q> e = new CommitEntry.LaneRequest<>(this, requireNonNull(request, "request"));
    committer.commitAndWait(e);
    if (e.failure instanceof RuntimeException r) {
      throw r; // the lane's own code threw (a bug): its requests may have no outcome
    }
    if (e.failure instanceof Error err) {
      throw err;
    }
    e.runAfterCommit();
  }

  /** The lane's requests of a batch, prepared (on the committing thread). */
  Prepared prepare(List<Q> requests) {
    return prepare.apply(requests);
  }

  @Override
  public String toString() {
    return "CommitLane[" + name + "]";
  }
}
