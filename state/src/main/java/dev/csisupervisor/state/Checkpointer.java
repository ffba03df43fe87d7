package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Result;
import dev.csisupervisor.state.JournalReplay.Segment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Folds journal segments into MapDB checkpoints ({@link Checkpoint}) for a {@link JournalStateStore}: in the
 * background, on its own thread, once segments pile up; in the foreground at close. A checkpoint is written from
 * files that no longer change (the newest checkpoint and the segments the writer has moved past) into a new file,
 * then swapped in; only then are the segments and the older checkpoint it covers deleted. Writers never wait for
 * one: they hold the lock only to start it and to swap its result in.
 *
 * <p>Guarded by the store's lock, the one that guards the store's {@link JournalWriter}: {@link #afterAppend},
 * {@link #inBackground}, {@link #finalCheckpoint} and the accessors are called with it held (the store's open calls
 * {@code inBackground} before the store is shared); the background task takes it itself; {@link #shutdown},
 * {@link #awaitTermination} and {@link #awaitIdle} are called without it.
 */
final class Checkpointer {
  private static final Logger log = LoggerFactory.getLogger(Checkpointer.class);

  private final Object lock; // the store's
  private final StateDirectory dir;
  private final JournalWriter writer; // guarded by lock
  private final ExecutorService executor;
  private Path checkpoint; // guarded by lock: the newest durable checkpoint, or null
  private long checkpointSequence; // guarded by lock
  private boolean running; // guarded by lock
  /** A checkpoint starts once this many segments exist; raised after a failure so a full disk is not hammered. */
  private int atSegments = 2; // guarded by lock

  /**
   * @param lock the store's lock, which guards {@code writer}
   * @param checkpoint the newest durable checkpoint, or null
   * @param checkpointSequence the journal sequence it holds (0 without one)
   */
  Checkpointer(Object lock, StateDirectory dir, JournalWriter writer, Path checkpoint, long checkpointSequence) {
    this.lock = lock;
    this.dir = dir;
    this.writer = writer;
    this.checkpoint = checkpoint;
    this.checkpointSequence = checkpointSequence;
    this.executor = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "csi-state-checkpoint");
      t.setDaemon(true);
      return t;
    });
  }

  /** The newest durable checkpoint, or null. Holds lock. */
  Path checkpoint() {
    return checkpoint;
  }

  /** The journal sequence {@link #checkpoint()} holds. Holds lock. */
  long checkpointSequence() {
    return checkpointSequence;
  }

  /** After an append: starts a background checkpoint once enough segments exist and none runs. Holds lock. */
  void afterAppend() {
    if (writer.segments().size() >= atSegments && !running) {
      inBackground();
    }
  }

  /**
   * Folds the segments the writer no longer appends to into a new checkpoint, on the checkpoint thread. Holds lock
   * (or is called by {@link StoreOpener} before the store is shared). A segment whose first sequence is past the last
   * acknowledged one (made for a batch that failed) holds nothing to fold and is left to the writer, which replaces
   * it.
   */
  void inBackground() {
    long upTo = writer.closedUpTo();
    List<Segment> covered = writer.segments().stream().filter(s -> s.firstSequence() <= upTo && !writer.isCurrent(s))
        .toList();
    if (covered.isEmpty() || upTo <= checkpointSequence) {
      return;
    }
    running = true;
    Path base = checkpoint;
    long baseSequence = checkpointSequence;
    executor.execute(() -> {
      try {
        take(base, baseSequence, covered, upTo);
      } catch (IOException | RuntimeException | OutOfMemoryError e) {
        log.warn("background checkpoint of the state in {} up to sequence {} failed (the journal still holds every"
            + " change; retried when the next segment fills): {}", dir.path, upTo, StateDirectory.describe(e));
        synchronized (lock) {
          atSegments = writer.segments().size() + 1;
        }
      } finally {
        synchronized (lock) {
          running = false;
        }
      }
    });
  }

  /**
   * At close, once the writer is closed: folds what the journal holds past the checkpoint into a final checkpoint,
   * or deletes the segments if they hold nothing new. Holds lock.
   */
  void finalCheckpoint() throws IOException {
    List<Segment> segments = writer.segments();
    if (!segments.isEmpty()) {
      if (writer.lastSequence() > checkpointSequence) {
        take(checkpoint, checkpointSequence, segments, writer.lastSequence());
      } else {
        for (Segment s : segments) {
          Files.deleteIfExists(s.path());
        }
        dir.sync();
      }
    }
  }

  /** Writes a checkpoint at {@code upTo} from files only, then retires what it covers. */
  private void take(Path base, long baseSequence, List<Segment> segments, long upTo) throws IOException {
    Map<String, byte[]> records = base == null ? new HashMap<>() : Checkpoint.read(base).records();
    Result r = JournalReplay.replay(records, baseSequence, segments, upTo);
    if (r.corruption() != null || r.lastSequence() != upTo) {
      throw new StateStoreException("the journal does not read back up to sequence " + upTo
          + (r.corruption() == null ? " (it ends at " + r.lastSequence() + ")" : ": " + r.corruption().describe()));
    }
    Path target = dir.checkpointPath(upTo);
    Checkpoint.write(target, upTo, records, dir);
    synchronized (lock) {
      checkpoint = target;
      checkpointSequence = upTo;
      atSegments = 2;
      writer.checkpointed(segments);
    }
    // Only files nobody reads any more: the writer forgot these segments, readers use the new checkpoint.
    for (Segment s : segments) {
      Files.deleteIfExists(s.path());
    }
    if (base != null && !base.equals(target)) {
      Files.deleteIfExists(base);
    }
    dir.sync();
    log.debug("checkpoint {} written ({} records); {} journal segment(s) retired", target, records.size(),
        segments.size());
  }

  /** Waits until no background checkpoint runs (for tests that copy the files as a crash would leave them). */
  void awaitIdle() throws InterruptedException, ExecutionException {
    executor.submit(() -> {}).get();
  }

  /** Takes no new background checkpoint; one in flight goes on. */
  void shutdown() {
    executor.shutdown();
  }

  /** After {@link #shutdown}: waits up to 5 minutes for a background checkpoint in flight. */
  void awaitTermination() {
    try {
      if (!executor.awaitTermination(5, TimeUnit.MINUTES)) {
        log.warn("a background checkpoint of {} did not finish in 5 minutes; closing without it", dir.path);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
