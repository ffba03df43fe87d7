package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalReplay.Segment;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends batches to the journal: one positional write of the whole batch and one {@code force(false)} into a
 * preallocated segment, the next of which a {@link SegmentPipeline} prepares in the background. Not thread-safe:
 * the store calls it under its lock.
 *
 * <p>A new segment is started at the first append after open, when a batch does not fit, and after any failed
 * write or force; it is named by its first sequence, which supersedes whatever an older segment holds from that
 * sequence on (see {@link JournalReplay}). So a failed batch never needs to be found and cut out of the old
 * segment: the next batch reuses its sequence numbers in a fresh segment, and the old bytes are dead.
 */
final class JournalWriter {
  private static final Logger log = LoggerFactory.getLogger(JournalWriter.class);
  private static final long MIN_SEGMENT = 4096;

  /** Opens files; tests wrap the channels to inject faults. */
  interface ChannelFactory {
    FileChannel open(Path path, Set<? extends OpenOption> options) throws IOException;

    /**
     * Where the next segment is prepared: null for the store's own background thread. Tests that count writes
     * and forces return a direct executor, so that preparations happen at a known point (right after the batch
     * that started a segment).
     */
    default Executor segmentPreparer() {
      return null;
    }

    ChannelFactory DEFAULT = FileChannel::open;
  }

  private final StateDirectory dir;
  private final long segmentBytes;
  private final ChannelFactory io;
  private final SegmentPipeline pipeline;
  /** Every segment that may hold records after the last checkpoint, the current one last. */
  private final List<Segment> segments;
  private FileChannel channel; // the current segment, or null: the next append starts a fresh one
  private long position;
  private long capacity;
  private long nextSequence;
  private ByteBuffer buffer = ByteBuffer.allocateDirect(64 << 10);

  JournalWriter(StateDirectory dir, long nextSequence, List<Segment> existing, long segmentBytes, ChannelFactory io,
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

  /**
   * Writes the batch and forces it; returns the sequence of its last record.
   *
   * @throws IOException if a write, a force or a new segment failed: then nothing of this batch counts, and the
   *     next append starts a fresh segment
   */
  long append(List<StateChange> changes) throws IOException {
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
      abandon(fresh, length);
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
   * forcing a write later flushes no file size or block allocation) and renamed, so a crash never leaves a
   * half-made segment that would supersede records. Where the disk has no room for the zeros, the segment is
   * made without them and grows with each batch (each force then flushes its new size too): a small or nearly
   * full disk still commits as long as the batches fit.
   */
  private void startSegment(long needed) throws IOException {
    closeChannel();
    Path target = dir.segmentPath(nextSequence);
    SegmentPipeline.Prepared prepared = pipeline.take(needed);
    if (prepared != null) {
      try {
        Files.move(prepared.path(), target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
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
      Files.deleteIfExists(temp);
      created = io.open(temp, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE));
      dir.restrictPermissions(temp);
      try {
        SegmentPipeline.zeroFill(created, 0, size);
      } catch (IOException noRoom) {
        created.truncate(0); // give the blocks back: the batches themselves may still fit
        log.info("journal segment {} is made without preallocation: {} bytes of zeros do not fit ({}), so each"
            + " batch extends the file", target.getFileName(), size, StateDirectory.describe(noRoom));
      }
      created.force(true);
      Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
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

  private static void deleteQuietly(Path path, Exception cause) {
    try {
      Files.deleteIfExists(path);
    } catch (IOException suppressed) {
      cause.addSuppressed(suppressed);
    }
  }

  /**
   * After a failed write or force the segment cannot be trusted (the kernel may have dropped the dirty pages);
   * the next append starts a fresh one, whose name supersedes this batch's bytes. A segment made for this very
   * batch holds nothing else, so it is removed at once.
   */
  private void abandon(boolean freshForThisBatch, int length) {
    Segment current = segments.get(segments.size() - 1);
    if (freshForThisBatch) {
      closeChannel();
      try {
        Files.deleteIfExists(current.path());
        segments.remove(segments.size() - 1);
        dir.sync();
      } catch (IOException e) {
        log.debug("could not remove the journal segment {} of a failed batch (the next segment supersedes it)",
            current.path(), e);
      }
      return;
    }
    // Until the next segment exists, only these bytes tell a reopen that the batch is dead: zero them if the
    // disk lets us (a full disk usually does, the blocks are preallocated).
    try {
      SegmentPipeline.zeroFill(channel, position, length);
      channel.force(false);
    } catch (IOException | RuntimeException e) {
      log.debug("could not zero the failed batch in {} (the next segment supersedes it)", current.path(), e);
    }
    closeChannel();
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
