package dev.csisupervisor.state;

import static java.util.Objects.requireNonNull;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One batch of {@link GroupCommitStore} written: each lane's requests prepared, every change in ONE {@code apply}
 * of the store below, the lanes told the outcome, each entry given its failure (or none). Run by the thread that
 * holds the group commit's turn, without its lock; it neither marks entries done nor wakes anyone (the group
 * commit does, after).
 */
final class BatchCommit {
  private static final Logger log = LoggerFactory.getLogger(GroupCommitStore.class);

  private final StateStore store;
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong changes = new AtomicLong();

  BatchCommit(StateStore store) {
    this.store = store;
  }

  long commits() {
    return commits.get();
  }

  long changes() {
    return changes.get();
  }

  /** Commits {@code batch}; {@code refused} (not null) fails it without a write (the store was stopped). */
  void commit(List<CommitEntry> batch, Throwable refused) {
    Map<CommitLane<?>, List<CommitEntry.LaneRequest<?>>> lanes = new LinkedHashMap<>();
    List<CommitEntry.Changes> plain = new ArrayList<>();
    for (CommitEntry e : batch) {
      if (e instanceof CommitEntry.LaneRequest<?> lr) {
        lanes.computeIfAbsent(lr.lane, l -> new ArrayList<>()).add(lr);
      } else {
        plain.add((CommitEntry.Changes) e);
      }
    }
    Map<CommitLane<?>, CommitLane.Prepared> prepared = new LinkedHashMap<>();
    lanes.forEach((lane, requests) -> {
      try {
        prepared.put(lane, prepare(lane, requests));
      } catch (RuntimeException | Error ex) {
        log.error("preparing the {} change(s) of {} failed; they are not committed", requests.size(), lane, ex);
        requests.forEach(lr -> lr.failure = ex);
      }
    });
    // In arrival order; a lane's changes where its first request of the batch arrived.
    List<StateChange> all = new ArrayList<>();
    for (CommitEntry e : batch) {
      if (e instanceof CommitEntry.Changes c) {
        all.addAll(c.changes);
      } else if (e instanceof CommitEntry.LaneRequest<?> lr && lanes.get(lr.lane).get(0) == lr
          && prepared.containsKey(lr.lane)) {
        all.addAll(prepared.get(lr.lane).changes());
      }
    }

    Throwable failure = refused;
    if (failure == null && !all.isEmpty()) {
      try {
        store.apply(all);
        commits.incrementAndGet();
        changes.addAndGet(all.size());
      } catch (StateStoreException ex) {
        // Expected when the disk is full: one line (the callers get the exception), no stack trace per retry.
        log.warn("commit of {} change(s) failed; nothing of it changed: {}", all.size(), ex.getMessage());
        failure = ex;
      } catch (RuntimeException | Error ex) {
        log.error("commit of {} change(s) failed; nothing of it changed", all.size(), ex);
        failure = ex;
      }
    }

    Throwable outcome = failure;
    prepared.forEach((lane, p) -> tell(lane, p, lanes.get(lane), outcome));
    plain.forEach(c -> c.failure = outcome);
  }

  @SuppressWarnings("unchecked")
  private static <Q> CommitLane.Prepared prepare(CommitLane<Q> lane,
      List<CommitEntry.LaneRequest<?>> entries) {
    List<Q> requests = new ArrayList<>(entries.size());
    entries.forEach(lr -> requests.add((Q) lr.request));
    return requireNonNull(lane.prepare(requests), () -> lane + " prepared null");
  }

  private static void tell(CommitLane<?> lane, CommitLane.Prepared p,
      List<CommitEntry.LaneRequest<?>> entries, Throwable failure) {
    try {
      if (failure == null) {
        CommitEntry.AfterCommit after =
            new CommitEntry.AfterCommit(requireNonNull(p.committed(), () -> lane + " returned no follow-up"));
        entries.forEach(lr -> lr.afterCommit = after);
      } else {
        p.failed(failure);
      }
    } catch (RuntimeException | Error ex) {
      log.error("{} failed to take the outcome of its commit", lane, ex);
      entries.forEach(lr -> lr.failure = ex);
    }
  }
}
