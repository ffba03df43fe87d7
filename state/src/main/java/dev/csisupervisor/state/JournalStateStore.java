package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Result;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The durable {@link StateStore}: a journal plus MapDB checkpoints in {@code <dataDir>/state/}, in the manner of
 * etcd's {@code wal} and {@code snap} packages.
 *
 * <p><b>Writes.</b> Every {@link #apply} (and so every {@code put}/{@code delete}) is one positional write of its
 * framed records into a preallocated journal segment plus one {@code force(false)}: the registry's group commit
 * turns any number of waiting changes into one such write. The cost of a change does not depend on how many
 * records the store holds. The store keeps no copy of the records in memory.
 *
 * <p><b>Checkpoints</b> ({@link Checkpointer}). When a segment fills up and the closed segments are at least as large
 * as the last checkpoint's image (at least one segment), a background thread writes the image as
 * of the end of the older segments into a new MapDB file ({@link Checkpoint}), renames it into place, and then
 * deletes the segments and the checkpoint it covers; on a clean {@link #close()} the same runs in the foreground, so the next
 * open reads one file. Writers wait for a checkpoint never: it reads only files that no longer change.
 *
 * <p><b>Open</b> ({@link StoreOpener}) = newest checkpoint + the journal records after it. A torn tail (a batch a
 * crash cut short: never acknowledged) is dropped with a log line. Damage anywhere else (a checkpoint that does not
 * read back, a broken record followed by intact ones, a sequence gap) is corruption: with {@link Options#strict()}
 * open fails with {@link StateFileCorruptException} and touches nothing; otherwise everything up to the damage is
 * kept (and made durable in a new checkpoint first), the damaged files are moved into
 * {@code state/corrupt-<UTC time>/}, and open logs at ERROR what it kept and moved. A store written by an earlier
 * version ({@code registry.db} and {@code registry.db.mirror} in the data directory) is converted once, on open; its
 * files are deleted only after the checkpoint holding their records is durable.
 *
 * <p><b>Failures never wedge the store.</b> A failed write or force fails exactly that call (nothing changed) with
 * an error naming the segment and the cause; before the call returns, a fresh segment that supersedes the failed
 * bytes is made durable, so neither a later call nor a power cut brings them back, and the next call succeeds as
 * soon as the disk lets it: no restart is needed after a full disk is freed. Only where neither a new segment nor
 * cutting the batch off its own segment works does the journal stop taking changes until a restart (as etcd stops).
 *
 * <p><b>Power cuts.</b> Every name the store creates, renames or deletes is made durable (its directory forced)
 * before anything acknowledged depends on it, the state directory's own name included; see {@link JournalReplay}
 * for what counts as a torn write.
 *
 * <p>One process at a time holds the directory's {@code lock} file; the directory is 0700, its files 0600.
 * Thread-safe: calls are serialized on one lock.
 */
public final class JournalStateStore implements StateStore {

  /** The store's directory inside the data directory. */
  public static final String DIRECTORY = "state";

  private static final Logger log = LoggerFactory.getLogger(JournalStateStore.class);

  /**
   * How to open the store.
   *
   * @param strict fail with {@link StateFileCorruptException} instead of moving damaged files aside
   * @param readOnly never write (no migration, no checkpoint, no repair): for inspecting a store offline;
   *     mutating calls throw {@link IllegalStateException}
   * @param segmentBytes the size of a journal segment (preallocated); a checkpoint is taken each time one fills
   * @param clock the clock for the names of quarantine directories
   */
  public record Options(boolean strict, boolean readOnly, long segmentBytes, Clock clock) {
    /** The default segment size: 4 MiB, some 13 000 registrations. */
    public static final long DEFAULT_SEGMENT_BYTES = 4L << 20;

    public Options {
      if (segmentBytes < 4096 || segmentBytes > (1L << 30)) {
        throw new IllegalArgumentException("segmentBytes must be between 4096 and 2^30, got " + segmentBytes);
      }
      if (clock == null) {
        throw new IllegalArgumentException("clock must not be null");
      }
    }

    /** Not strict, writable, 4 MiB segments, the UTC system clock. */
    public static Options defaults() {
      return new Options(false, false, DEFAULT_SEGMENT_BYTES, Clock.systemUTC());
    }

    public Options withStrict(boolean strict) {
      return new Options(strict, readOnly, segmentBytes, clock);
    }

    public Options withReadOnly(boolean readOnly) {
      return new Options(strict, readOnly, segmentBytes, clock);
    }

    public Options withSegmentBytes(long segmentBytes) {
      return new Options(strict, readOnly, segmentBytes, clock);
    }

    public Options withClock(Clock clock) {
      return new Options(strict, readOnly, segmentBytes, clock);
    }
  }

  private final StateDirectory dir;
  private final Options options;
  private final Optional<Path> quarantinedTo;
  private final Object lock = new Object();
  private final ExecutorService segmentPreparer; // the pipeline's own thread, or null when a test gave one
  private final JournalWriter writer; // guarded by lock
  private final Checkpointer checkpoints; // its methods are called holding lock
  private boolean closed; // guarded by lock
  /** What open() replayed, kept for the first loadAll() (a restore, right after open); dropped by a change. */
  private Map<String, byte[]> openedRecords; // guarded by lock

  /** A store over what {@link StoreOpener} found; it holds the directory's lock file. */
  JournalStateStore(StateDirectory dir, Options options, StateIo io, StoreOpener.Opened opened) {
    this.dir = dir;
    this.options = options;
    this.openedRecords = opened.records();
    this.quarantinedTo = opened.quarantinedTo();
    Executor preparer = io.segmentPreparer();
    if (preparer == null) {
      ThreadPoolExecutor own = new ThreadPoolExecutor(1, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
        Thread t = new Thread(r, "csi-state-segment");
        t.setDaemon(true);
        return t;
      });
      own.allowCoreThreadTimeOut(true); // no thread while no segment is being prepared
      segmentPreparer = own;
      preparer = own;
    } else {
      segmentPreparer = null;
    }
    this.writer = new JournalWriter(dir, opened.lastSequence() + 1, opened.segments(), options.segmentBytes(), io,
        new SegmentPipeline(dir, io, preparer));
    this.checkpoints = new Checkpointer(lock, dir, writer, opened.checkpoint(), opened.checkpointSequence(),
        io.checkpointRunner());
  }

  /** Opens (or creates) {@code <dataDir>/state/} with {@link Options#defaults()}. */
  public static JournalStateStore open(Path dataDir) {
    return open(dataDir, Options.defaults());
  }

  /**
   * Opens (or creates) the store in {@code <dataDir>/state/}, creating directories (0700) as needed.
   *
   * @throws StateFileLockedException if another process or another open store holds the directory
   * @throws StateFileCorruptException in strict mode, if a checkpoint or the journal is damaged (not a torn tail)
   * @throws StateStoreException if the directory or files cannot be used (permissions, not a directory, I/O,
   *     out of memory) — never a reason to move files aside
   */
  public static JournalStateStore open(Path dataDir, Options options) {
    return open(dataDir, options, StateIo.DEFAULT);
  }

  /** Opens the store with its file operations going through {@code io} (tests record or fail them). */
  static JournalStateStore open(Path dataDir, Options options, StateIo io) {
    if (dataDir == null) {
      throw new IllegalArgumentException("dataDir must not be null");
    }
    if (options == null) {
      throw new IllegalArgumentException("options must not be null");
    }
    return StoreOpener.open(dataDir, options, io);
  }

  /** The store's directory, {@code <dataDir>/state}. */
  public Path directory() {
    return dir.path;
  }

  /** Where open moved damaged files, if it did. */
  public Optional<Path> quarantinedTo() {
    return quarantinedTo;
  }

  /** The journal sequence of the last acknowledged change (0 for a new store). */
  public long lastSequence() {
    synchronized (lock) {
      return writer.lastSequence();
    }
  }

  @Override
  public void apply(List<StateChange> changes) {
    Keys.checkChanges(changes);
    if (changes.isEmpty()) {
      return;
    }
    synchronized (lock) {
      ensureWritable();
      openedRecords = null;
      // A thread's interrupt closes a FileChannel it uses: commit with the flag cleared, restore it after.
      boolean interrupted = Thread.interrupted();
      try {
        writer.append(changes); // encodes (and checks key lengths) before it writes anything
      } catch (IllegalArgumentException e) {
        throw e; // a key over the limit: misuse, nothing was written
      } catch (IOException | RuntimeException e) {
        String stopped = writer.stopped();
        throw new StateStoreException("cannot commit " + changes.size() + " change(s) to the state journal in "
            + dir.path + ": " + StateDirectory.describe(e) + (stopped == null
                ? "; nothing changed, and the journal goes on in a fresh segment"
                : "; the journal takes no more changes until the agent restarts (" + stopped + ")"), e);
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
      checkpoints.afterAppend();
    }
  }

  @Override
  public Optional<byte[]> get(String key) {
    Keys.check(key);
    synchronized (lock) {
      ensureOpen();
      Map<String, byte[]> records = openedRecords != null ? openedRecords : readAll();
      return Optional.ofNullable(records.get(key)).map(byte[]::clone);
    }
  }

  @Override
  public Map<String, byte[]> loadAll() {
    synchronized (lock) {
      ensureOpen();
      Map<String, byte[]> records = openedRecords;
      if (records == null) {
        return readAll();
      }
      if (!options.readOnly()) {
        openedRecords = null; // the caller owns these arrays now
        return records;
      }
      Map<String, byte[]> copy = new HashMap<>();
      records.forEach((k, v) -> copy.put(k, v.clone()));
      return copy;
    }
  }

  /** Served from what open() read while the first {@link #loadAll()} has not taken it, without taking it. */
  @Override
  public Map<String, byte[]> loadAll(String prefix) {
    if (prefix == null) {
      throw new IllegalArgumentException("prefix must not be null");
    }
    synchronized (lock) {
      ensureOpen();
      boolean shared = openedRecords != null;
      Map<String, byte[]> records = shared ? openedRecords : readAll();
      Map<String, byte[]> matching = new HashMap<>();
      records.forEach((k, v) -> {
        if (k.startsWith(prefix)) {
          matching.put(k, shared ? v.clone() : v);
        }
      });
      return matching;
    }
  }

  /** The records as the files hold them: the checkpoint plus the journal up to the last acknowledged change. */
  private Map<String, byte[]> readAll() {
    try {
      Path checkpoint = checkpoints.checkpoint();
      Map<String, byte[]> records = checkpoint == null ? new HashMap<>() : Checkpoint.read(checkpoint).records();
      Result r = JournalReplay.replay(records, checkpoints.checkpointSequence(), writer.segments(),
          writer.lastSequence());
      if (r.corruption() != null || r.lastSequence() != writer.lastSequence()) {
        throw new StateStoreException("the state journal in " + dir.path + " no longer reads back up to sequence "
            + writer.lastSequence() + (r.corruption() == null ? "" : ": " + r.corruption().describe()));
      }
      return records;
    } catch (IOException e) {
      throw new StateStoreException("cannot read the state in " + dir.path + ": " + e, e);
    }
  }

  // ---- checkpoints ----

  /** Starts a background checkpoint of the journal an unclean stop left; called by {@link StoreOpener}. */
  void checkpointInBackground() {
    checkpoints.inBackground();
  }

  /** Waits until no background checkpoint runs (for tests that copy the files as a crash would leave them). */
  void awaitCheckpoint() throws InterruptedException {
    checkpoints.awaitIdle();
  }

  /** How long {@link #close()} waits for a background checkpoint before it closes without one (tests shorten it). */
  void checkpointCloseWait(Duration wait) {
    checkpoints.closeWait(wait);
  }

  // ---- lifecycle ----

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("state store " + dir.path + " is closed");
    }
  }

  private void ensureWritable() {
    ensureOpen();
    if (options.readOnly()) {
      throw new IllegalStateException("state store " + dir.path + " was opened read-only");
    }
  }

  /**
   * Waits for a background checkpoint (up to 5 minutes); then, unless read-only, folds the journal into a final
   * checkpoint. One still running after the wait is abandoned and the final checkpoint skipped: the journal keeps
   * every change, and the next open replays it.
   */
  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
    }
    boolean noCheckpointRuns = checkpoints.awaitBackground();
    if (segmentPreparer != null) {
      segmentPreparer.shutdown();
    }
    synchronized (lock) {
      try {
        writer.close();
        if (!options.readOnly() && noCheckpointRuns) {
          checkpoints.finalCheckpoint();
        }
      } catch (IOException | RuntimeException e) {
        log.warn("final checkpoint of the state in {} failed (the journal still holds every change; the next open"
            + " replays it): {}", dir.path, StateDirectory.describe(e));
      } finally {
        awaitPreparer();
        dir.unlock();
      }
    }
  }

  /** A preparation still running deletes its own file when it ends: wait, so the directory is left clean. */
  private void awaitPreparer() {
    if (segmentPreparer == null) {
      return;
    }
    try {
      if (!segmentPreparer.awaitTermination(1, TimeUnit.MINUTES)) {
        log.warn("the preparation of a journal segment in {} did not end in a minute; the next open deletes it",
            dir.path);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "JournalStateStore[" + dir.path + "]";
  }
}
