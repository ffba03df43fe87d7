package dev.csisupervisor.state;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prepares the journal's next segment off the commit path, in the manner of etcd's {@code filePipeline}: a
 * temporary file ({@code next-segment-<n>.tmp}, so an open deletes one a crash left) filled with zeros and
 * forced, handed to the writer when its segment fills. The writer never waits for it: if nothing is ready when it
 * needs a segment, it makes one itself.
 *
 * <p>Thread-safe. Preparations run one at a time on the given executor; a failed one (a full disk) is logged
 * once and tried again at the next {@link #prepare}.
 */
final class SegmentPipeline {
  private static final Logger log = LoggerFactory.getLogger(SegmentPipeline.class);
  static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20).asReadOnlyBuffer();

  /** A zero-filled, forced file of {@code size} bytes at {@code path}, open for writing. */
  record Prepared(Path path, FileChannel channel, long size) {}

  private final StateDirectory dir;
  private final StateIo io;
  private final Executor executor;
  private Prepared ready; // guarded by this
  private boolean preparing; // guarded by this
  private boolean closed; // guarded by this
  private long counter; // guarded by this
  private String lastFailure; // guarded by this

  SegmentPipeline(StateDirectory dir, StateIo io, Executor executor) {
    this.dir = dir;
    this.io = io;
    this.executor = executor;
  }

  /** Starts preparing a segment of {@code size} bytes unless one is ready or being made. */
  void prepare(long size) {
    Path temp;
    synchronized (this) {
      if (closed || preparing || ready != null) {
        return;
      }
      preparing = true;
      temp = dir.path.resolve("next-segment-" + (counter++) + StateDirectory.TEMP_SUFFIX);
    }
    try {
      executor.execute(() -> make(temp, size));
    } catch (RejectedExecutionException e) {
      synchronized (this) {
        preparing = false;
      }
    }
  }

  /**
   * The prepared segment if one is ready (the caller owns it now), else null. One smaller than {@code minSize}
   * (made before a batch that big came) is deleted, and null returned.
   */
  Prepared take(long minSize) {
    Prepared p;
    synchronized (this) {
      p = ready;
      ready = null;
    }
    if (p != null && p.size() < minSize) {
      discard(p.path(), p.channel());
      return null;
    }
    return p;
  }

  /** Whether a preparation is under way or its result waits to be taken (for tests). */
  synchronized boolean busy() {
    return preparing || ready != null;
  }

  /** Deletes a prepared segment nobody took; a preparation still running deletes its own file when it ends. */
  void close() {
    Prepared p;
    synchronized (this) {
      closed = true;
      p = ready;
      ready = null;
    }
    if (p != null) {
      discard(p.path(), p.channel());
    }
  }

  private void make(Path temp, long size) {
    FileChannel created = null;
    try {
      created = io.open(temp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
          StandardOpenOption.WRITE));
      dir.restrictPermissions(temp);
      io.preallocate(created, 0, size);
      created.force(true);
      synchronized (this) {
        preparing = false;
        lastFailure = null;
        if (!closed) {
          ready = new Prepared(temp, created, size);
          return;
        }
      }
      discard(temp, created);
    } catch (IOException | RuntimeException e) {
      discard(temp, created);
      String failure = StateDirectory.describe(e);
      boolean repeated;
      synchronized (this) {
        preparing = false;
        repeated = failure.equals(lastFailure);
        lastFailure = failure;
      }
      if (!repeated) {
        log.info("could not prepare the next journal segment of {} bytes in {} ({}): the writer makes a smaller one,"
            + " or one without preallocation, when it needs it", size, dir.path, failure);
      }
    }
  }

  private void discard(Path path, FileChannel channel) {
    try {
      if (channel != null) {
        channel.close();
      }
      io.delete(path);
    } catch (IOException e) {
      log.debug("could not delete the unused journal segment {} (the next open deletes it)", path, e);
    }
  }
}
