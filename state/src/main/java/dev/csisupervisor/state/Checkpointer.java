package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Result;
import dev.csisupervisor.state.JournalReplay.Segment;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
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
 * <p>At close the final checkpoint never runs beside a background one: close waits for it, and if it is still
 * running after the wait, abandons it (it publishes and deletes nothing) and skips the final one. Temporary files
 * have names of their own ({@link Checkpoint#writeAside}), so two checkpoints never write into one file.
 *
 * <p>Guarded by the store's lock, the one that guards the store's {@link JournalWriter}: {@link #afterAppend},
 * {@link #inBackground}, {@link #finalCheckpoint} and the accessors are called with it held (the store's open calls
 * {@code inBackground} before the store is shared); the background task takes it itself; {@link #awaitBackground}
 * and {@link #awaitIdle} are called without it. A background checkpoint holds {@code publishing} (then the lock)
 * while it publishes; nothing takes {@code publishing} while holding the lock.
 */
final class Checkpointer {
  private static final Logger log = LoggerFactory.getLogger(Checkpointer.class);

  private final Object lock; // the store's
  private final StateDirectory dir;
  private final JournalWriter writer; // guarded by lock
  private final Executor executor;
  private final ExecutorService ownThread; // the executor when the store's StateIo gave none, else null
  /** Held while a background checkpoint publishes its file and retires what it covers; see {@link #abandon}. */
  private final Object publishing = new Object();
  private Path checkpoint; // guarded by lock: the newest durable checkpoint, or null
  private long checkpointSequence; // guarded by lock
  private boolean running; // guarded by lock
  private boolean stopped; // guarded by lock: no new background checkpoint
  private boolean abandoned; // guarded by publishing: a background checkpoint still running may publish nothing
  /**
   * A checkpoint starts once this many segments exist: the current one plus as many full ones as the checkpoint is
   * large (at least one), so that folding writes at most about as much again as the journal took (a checkpoint
   * rewrites the whole image: with an image ten times a segment, folding at every segment wrote ten times the
   * journal's bytes, and its fsyncs queued the commits behind them), and a restore replays at most about the
   * image's size of journal. Raised after a failure so a full disk is not hammered.
   */
  private int atSegments; // guarded by lock
  /** How long {@link #awaitBackground} waits at close. */
  private Duration closeWait = Duration.ofMinutes(5); // guarded by lock

  /**
   * @param lock the store's lock, which guards {@code writer}
   * @param checkpoint the newest durable checkpoint, or null
   * @param checkpointSequence the journal sequence it holds (0 without one)
   * @param executor where background checkpoints run, or null for a thread of their own
   */
  Checkpointer(Object lock, StateDirectory dir, JournalWriter writer, Path checkpoint, long checkpointSequence,
      Executor executor) {
    this.lock = lock;
    this.dir = dir;
    this.writer = writer;
    this.checkpoint = checkpoint;
    this.checkpointSequence = checkpointSequence;
    this.atSegments = 2; // the image's size is known once a checkpoint is taken here
    if (executor == null) {
      ownThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "csi-state-checkpoint");
        t.setDaemon(true);
        return t;
      });
      executor = ownThread;
    } else {
      ownThread = null;
    }
    this.executor = executor;
  }

  /** {@link #atSegments} after a checkpoint of {@code records}: their journal size in segments, at least one. */
  private int foldAt(Map<String, byte[]> records) {
    long bytes = 0;
    for (Map.Entry<String, byte[]> e : records.entrySet()) {
      bytes += JournalFormat.HEADER + JournalFormat.BODY_FIXED + e.getKey().length() + e.getValue().length;
    }
    long segment = Math.max(1, writer.segmentBytes());
    return 1 + (int) Math.min(1024, Math.max(1, (bytes + segment - 1) / segment));
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
    if (stopped || covered.isEmpty() || upTo <= checkpointSequence) {
      return;
    }
    running = true;
    Path base = checkpoint;
    long baseSequence = checkpointSequence;
    executor.execute(() -> {
      try {
        take(base, baseSequence, covered, upTo, true);
      } catch (IOException | RuntimeException | OutOfMemoryError e) {
        log.warn("background checkpoint of the state in {} up to sequence {} failed (the journal still holds every"
            + " change; retried when the next segment fills): {}", dir.path, upTo, StateDirectory.describe(e));
        synchronized (lock) {
          atSegments = writer.segments().size() + 1;
        }
      } finally {
        synchronized (lock) {
          running = false;
          lock.notifyAll();
        }
      }
    });
  }

  /**
   * At close, once the writer is closed and {@link #awaitBackground} found no background checkpoint running: folds
   * what the journal holds past the checkpoint into a final checkpoint, or deletes the segments if they hold nothing
   * new. Holds lock.
   */
  void finalCheckpoint() throws IOException {
    List<Segment> segments = writer.segments();
    if (!segments.isEmpty()) {
      if (writer.lastSequence() > checkpointSequence) {
        take(checkpoint, checkpointSequence, segments, writer.lastSequence(), false);
      } else {
        dir.delete(segments.stream().map(Segment::path).toList());
      }
    }
  }

  /**
   * Writes a checkpoint at {@code upTo} from files only, then publishes it and retires what it covers. A background
   * one publishes nothing once {@link #abandon} ran: the store is closed, and its files may already be another's.
   */
  private void take(Path base, long baseSequence, List<Segment> segments, long upTo, boolean background)
      throws IOException {
    Map<String, byte[]> records = base == null ? new HashMap<>() : Checkpoint.read(base).records();
    Result r = JournalReplay.replay(records, baseSequence, segments, upTo);
    if (r.corruption() != null || r.lastSequence() != upTo) {
      throw new StateStoreException("the journal does not read back up to sequence " + upTo
          + (r.corruption() == null ? " (it ends at " + r.lastSequence() + ")" : ": " + r.corruption().describe()));
    }
    Path target = dir.checkpointPath(upTo);
    Path written = Checkpoint.writeAside(target, upTo, records, dir);
    if (!background) {
      publish(written, target, upTo, base, segments, foldAt(records));
    } else {
      synchronized (publishing) {
        if (abandoned) {
          dir.io.delete(written);
          log.info("dropped the background checkpoint of {} up to sequence {}: the store closed without waiting for"
              + " it (the journal holds every change)", dir.path, upTo);
          return;
        }
        publish(written, target, upTo, base, segments, foldAt(records));
      }
    }
    log.debug("checkpoint {} written ({} records); {} journal segment(s) retired", target, records.size(),
        segments.size());
  }

  /** Renames the checkpoint into place, swaps it in, then deletes the segments and the older checkpoint it covers. */
  private void publish(Path written, Path target, long upTo, Path base, List<Segment> segments, int next)
      throws IOException {
    Checkpoint.publish(written, target, dir);
    synchronized (lock) {
      checkpoint = target;
      checkpointSequence = upTo;
      atSegments = next;
      writer.checkpointed(segments);
    }
    // Only files nobody reads any more: the writer forgot these segments, readers use the new checkpoint.
    List<Path> retired = new ArrayList<>(segments.stream().map(Segment::path).toList());
    if (base != null && !base.equals(target)) {
      retired.add(base);
    }
    dir.delete(retired);
  }

  /** Waits until no background checkpoint runs (for tests that copy the files as a crash would leave them). */
  void awaitIdle() throws InterruptedException {
    synchronized (lock) {
      while (running) {
        lock.wait();
      }
    }
  }

  /**
   * At close: starts no more background checkpoints and waits (up to 5 minutes) for one still running. Returns
   * whether none runs any more; if one still does, it is abandoned: it publishes and deletes nothing, so the final
   * checkpoint is skipped rather than written beside it (the journal holds every change; the next open replays it).
   */
  boolean awaitBackground() {
    boolean idle;
    synchronized (lock) {
      stopped = true;
      long deadline = System.nanoTime() + closeWait.toNanos();
      try {
        for (long left = closeWait.toNanos(); running && left > 0; left = deadline - System.nanoTime()) {
          TimeUnit.NANOSECONDS.timedWait(lock, left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      idle = !running;
    }
    if (ownThread != null) {
      ownThread.shutdown();
    }
    if (!idle) {
      abandon();
      log.warn("a background checkpoint of {} did not finish in {}; closing without it and without a final"
          + " checkpoint (the journal holds every change; the next open replays it)", dir.path, closeWait);
    }
    return idle;
  }

  /** Keeps a background checkpoint still running from publishing; waits while one is publishing. */
  private void abandon() {
    synchronized (publishing) {
      abandoned = true;
    }
  }

  /** How long close waits for a background checkpoint (tests shorten it). */
  void closeWait(Duration wait) {
    synchronized (lock) {
      closeWait = wait;
    }
  }
}
