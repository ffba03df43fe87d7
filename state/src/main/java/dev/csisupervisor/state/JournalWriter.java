package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Segment;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends batches to the journal: one positional write of the whole batch and one {@code force(false)} into a
 * preallocated segment, the next of which a {@link SegmentPipeline} prepares in the background. Not thread-safe:
 * the store calls it under its lock.
 *
 * <p>A new segment is started at the first append after open, when a batch does not fit, and at once after any
 * failed write or force; it is named by its first sequence, which supersedes whatever an older segment holds from
 * that sequence on (see {@link JournalReplay}). So a failed batch never needs to be found and cut out of the old
 * segment: the superseding segment is durable before the caller hears of the failure, the next batch reuses its
 * sequence numbers there, and the old bytes are dead even if a power cut keeps them.
 */
final class JournalWriter {
  private static final Logger log = LoggerFactory.getLogger(JournalWriter.class);
  private static final long MIN_SEGMENT = 4096;

  /** The seam's first name, from when it only opened files ({@link StateIo} is the seam): the fault tests use it. */
  interface ChannelFactory extends StateIo {
    ChannelFactory DEFAULT = FileChannel::open;
  }

  private final StateDirectory dir;
  private final long segmentBytes;
  private final StateIo io;
  private final SegmentPipeline pipeline;
  /** Every segment that may hold records after the last checkpoint, the current one last. */
  private final List<Segment> segments;
  private FileChannel channel; // the current segment, or null: the next append starts a fresh one
  private long position;
  private long capacity;
  private long nextSequence;
  private ByteBuffer buffer = ByteBuffer.allocateDirect(64 << 10);
  /** Why the writer takes no more batches: a failed one could not be cut off durably. Null while it works. */
  private String stopped;

  JournalWriter(StateDirectory dir, long nextSequence, List<Segment> existing, long segmentBytes, StateIo io,
      SegmentPipeline pipeline) {
    this.dir = dir;
    this.pipeline = pipeline;
    this.nextSequence = nextSequence;
    this.segments = new ArrayList<>(existing);
    this.segmentBytes = segmentBytes;
    this.io = io;
  }

  /** The sequence of the last acknowledged record. */
  long lastSequence() {
    return nextSequence - 1;
  }

  /** The segments written so far that a checkpoint at {@link #lastSequence()} covers. */
  List<Segment> segments() {
    return List.copyOf(segments);
  }

  /** Whether {@code s} is the segment appends go to. */
  boolean isCurrent(Segment s) {
    return channel != null && s.equals(segments.get(segments.size() - 1));
  }

  /** The last sequence in segments no longer appended to: all of them if there is no current segment. */
  long closedUpTo() {
    return channel == null ? lastSequence() : segments.get(segments.size() - 1).firstSequence() - 1;
  }

  /** Why the writer stopped taking batches, or null if it takes them. */
  String stopped() {
    return stopped;
  }

  /** The configured size of a segment. */
  long segmentBytes() {
    return segmentBytes;
  }

  /**
   * Writes the batch and forces it; returns the sequence of its last record.
   *
   * @throws IOException if a write, a force or a new segment failed: then nothing of this batch counts, now or
   *     after a power cut (unless {@link #stopped()} says otherwise)
   */
  long append(List<StateChange> changes) throws IOException {
    if (stopped != null) {
      throw new IOException("the journal stopped taking changes");
    }
    ByteBuffer frames = encode(changes);
    int length = frames.remaining();
    boolean fresh = false;
    if (channel == null || position + length > capacity) {
      startSegment(length + JournalFormat.HEADER);
      fresh = true;
    }
    try {
      long at = position;
      while (frames.hasRemaining()) {
        at += channel.write(frames, at);
      }
      channel.force(false);
    } catch (IOException | RuntimeException e) {
      cutOff(e);
      throw e;
    }
    position += length;
    nextSequence += changes.size();
    if (fresh) {
      pipeline.prepare(plannedSize(JournalFormat.HEADER)); // the next segment is made while this one fills
    }
    return nextSequence - 1;
  }

  private ByteBuffer encode(List<StateChange> changes) {
    int size = 0;
    byte[][] keys = new byte[changes.size()][];
    for (int i = 0; i < changes.size(); i++) {
      StateChange c = changes.get(i);
      keys[i] = JournalFormat.keyBytes(c.key());
      size += JournalFormat.frameSize(keys[i], c instanceof StateChange.Put p ? p.valueUnsafe() : null);
    }
    if (buffer.capacity() < size) {
      buffer = ByteBuffer.allocateDirect(Integer.highestOneBit(size) << 1);
    }
    buffer.clear();
    for (int i = 0; i < changes.size(); i++) {
      StateChange c = changes.get(i);
      JournalFormat.write(buffer, nextSequence + i, keys[i], c instanceof StateChange.Put p ? p.valueUnsafe() : null,
          i == 0, i == changes.size() - 1);
    }
    return buffer.flip();
  }

  /**
   * Makes {@code journal-<next sequence>.log} the current segment: the one the pipeline prepared if it is ready,
   * else one made here. Either way the file was written under a temporary name, filled with zeros (so that
   * forcing a write later flushes no file size or block allocation), forced, renamed (replacing a segment of the
   * same name: it held nothing acknowledged) and the directory forced, so a crash never leaves a half-made segment
   * that would supersede records. Where the disk has no room for the zeros, the segment is made without them and
   * grows with each batch (each force then flushes its new size too): a small or nearly full disk still commits as
   * long as the batches fit.
   */
  private void startSegment(long needed) throws IOException {
    closeChannel();
    Path target = dir.segmentPath(nextSequence);
    SegmentPipeline.Prepared prepared = pipeline.take(needed);
    if (prepared != null) {
      try {
        io.rename(prepared.path(), target);
        dir.sync();
      } catch (IOException | RuntimeException e) {
        closeQuietly(prepared.channel());
        deleteQuietly(prepared.path(), e);
        throw e;
      }
      install(target, prepared.channel(), prepared.size());
      return;
    }
    long size = plannedSize(needed);
    Path temp = target.resolveSibling(target.getFileName() + StateDirectory.TEMP_SUFFIX);
    FileChannel created = null;
    try {
      io.delete(temp);
      created = io.open(temp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE));
      dir.restrictPermissions(temp);
      try {
        io.preallocate(created, 0, size);
      } catch (IOException noRoom) {
        created.truncate(0); // give the blocks back: the batches themselves may still fit
        log.info("journal segment {} is made without preallocation: {} bytes of zeros do not fit ({}), so each"
            + " batch extends the file", target.getFileName(), size, StateDirectory.describe(noRoom));
      }
      created.force(true);
      io.rename(temp, target);
      dir.sync();
    } catch (IOException | RuntimeException e) {
      if (created != null) {
        closeQuietly(created);
      }
      deleteQuietly(temp, e);
      throw e;
    }
    install(target, created, size);
  }

  private void install(Path target, FileChannel segment, long size) {
    segments.removeIf(s -> s.firstSequence() == nextSequence); // replaced: it held nothing acknowledged
    segments.add(new Segment(target, nextSequence));
    channel = segment;
    position = 0;
    capacity = size;
  }

  /**
   * The size of a new segment: the configured one, or a quarter of the free space when that is less (so the
   * current segment, the next one and a checkpoint fit on a small disk), never less than 4 KiB or the batch.
   */
  long plannedSize(long needed) {
    long size = segmentBytes;
    long free = dir.usableSpace();
    if (free < 4 * segmentBytes) {
      size = Math.max(MIN_SEGMENT, (free / 4) & ~(MIN_SEGMENT - 1));
    }
    return Math.max(Math.min(size, segmentBytes), needed);
  }

  private void deleteQuietly(Path path, Exception cause) {
    try {
      io.delete(path);
    } catch (IOException suppressed) {
      cause.addSuppressed(suppressed);
    }
  }

  /**
   * After a failed write or force the batch must never count, not even after a power cut that keeps some of its
   * bytes (a failed force says nothing of which pages reached the disk, and the kernel may have dropped the rest).
   * As etcd's {@code cut}: the segment that supersedes it ({@code journal-<its first sequence>.log}) is made at once,
   * renamed into place and the directory forced, before the caller hears of the failure. Where even that fails (no
   * inode, an I/O error), the batch is cut off its own segment (truncated, forced). Where that fails too, nothing
   * proves the batch dead: the writer stops, as etcd does, and a restart replays whatever the disk holds, so that
   * what the process believes and what the disk holds agree again.
   */
  private void cutOff(Exception failure) {
    FileChannel failed = channel;
    channel = null;
    try {
      try {
        startSegment(JournalFormat.HEADER);
        return;
      } catch (IOException | RuntimeException e) {
        failure.addSuppressed(e);
      }
      try {
        failed.truncate(position);
        failed.force(true);
        log.warn("could not make the journal segment that supersedes a failed batch in {}; cut the batch off its"
            + " segment instead", dir.path, failure);
      } catch (IOException | RuntimeException e) {
        failure.addSuppressed(e);
        stopped = "a failed batch (" + StateDirectory.describe(failure) + ") could neither be superseded by a new"
            + " segment nor cut off its own, so a power cut could bring it back";
        log.error("STATE JOURNAL STOPPED in {}: {}. Restart the agent: it replays what the disk holds.", dir.path,
            stopped, failure);
      }
    } finally {
      closeQuietly(failed);
    }
  }

  /** Forgets segments a checkpoint now covers (the caller deletes the files). */
  void checkpointed(List<Segment> covered) {
    segments.removeAll(covered);
  }

  void close() {
    closeChannel();
    pipeline.close();
  }

  private void closeChannel() {
    if (channel != null) {
      closeQuietly(channel);
      channel = null;
    }
  }

  private static void closeQuietly(FileChannel c) {
    try {
      c.close();
    } catch (IOException e) {
      log.debug("closing a journal segment failed", e);
    }
  }
}
