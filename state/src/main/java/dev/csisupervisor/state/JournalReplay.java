package dev.csisupervisor.state;

import dev.csisupervisor.state.JournalFormat.Frame;
import dev.csisupervisor.state.JournalFormat.Problem;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Replays journal segments onto a map of records, in the manner of etcd's {@code wal} decoder.
 *
 * <p>Segments are read in the order of their first sequence number. A later segment <em>supersedes</em> whatever an
 * earlier one holds from its first sequence on: the writer starts a fresh segment after a failed write or force,
 * and after every open, so the bytes of a batch that was never acknowledged (cut short by a crash, or written
 * but not forced) are ignored once a later segment exists. Records at or below the base (the checkpoint's sequence)
 * are skipped, and the last sequence never goes below it: a segment the checkpoint covers may still be there when a
 * power cut undid part of its retirement (etcd likewise ignores entries at or below its snapshot's index).
 *
 * <p>In the last segment, the first frame that is short, fails its CRC, or leaves a batch without its commit mark is
 * a <b>torn tail</b> (the batch was never acknowledged and is dropped) only when it is what a power cut or a killed
 * write leaves (see {@link #torn}) and nothing valid follows it but the rest of that one batch or stale bytes. Anything
 * else (a damaged record with no zeros in it, such as a flipped bit in the last acknowledged batch; damage followed
 * by a later batch; an intact record with a sequence that does not follow; a segment that ends before the next one
 * begins) is <b>corruption</b>: the replay stops there and says where, and the caller decides (strict mode fails,
 * otherwise the rest is moved aside). Not thread-safe; one replay per call.
 */
final class JournalReplay {
  /** The unit a disk writes whole (the power-safe-overwrite assumption: see the README's "Durability of the state"). */
  static final int SECTOR = 512;
  /** The smallest run of zeros inside a record that counts as a hole a write left (a sector's part of it may be small). */
  static final int MIN_ZERO_RUN = 16;
  /** The smallest frame: a header, the fixed body and a one-byte key. */
  private static final int MIN_FRAME = JournalFormat.HEADER + JournalFormat.BODY_FIXED + 1;

  /** A segment file and the first sequence number its name gives. */
  record Segment(Path path, long firstSequence) {}

  /** Where and why the journal cannot be trusted past {@link Result#lastSequence()}. */
  record Corruption(Path segment, int offset, String reason) {
    String describe() {
      return "journal segment " + segment + " at byte " + offset + ": " + reason;
    }
  }

  /** What a replay found. {@code corruption} and {@code tornTail} are null when there was none. */
  record Result(long lastSequence, Corruption corruption, String tornTail) {}

  private final Map<String, byte[]> records;
  private final long base;
  private final long upTo;
  private long lastSequence;

  private JournalReplay(Map<String, byte[]> records, long baseSequence, long upTo) {
    this.records = records;
    this.base = baseSequence;
    this.lastSequence = baseSequence;
    this.upTo = upTo;
  }

  /**
   * Applies every acknowledged batch after {@code baseSequence} and at most {@code upTo} to {@code records}.
   *
   * @param segments sorted by first sequence
   * @throws IOException if a segment cannot be read (a file-system problem, never treated as damage)
   */
  static Result replay(Map<String, byte[]> records, long baseSequence, List<Segment> segments, long upTo)
      throws IOException {
    JournalReplay replay = new JournalReplay(records, baseSequence, upTo);
    for (int i = 0; i < segments.size() && replay.lastSequence < upTo; i++) {
      Segment segment = segments.get(i);
      long limit = i + 1 < segments.size() ? segments.get(i + 1).firstSequence() : Long.MAX_VALUE;
      if (limit <= replay.lastSequence + 1) {
        continue; // everything it holds is older than the base, or superseded: a leftover not yet deleted
      }
      if (segment.firstSequence() > replay.lastSequence + 1) {
        return new Result(replay.lastSequence, new Corruption(segment.path(), 0, "the segment starts at sequence "
            + segment.firstSequence() + " but the records before it end at " + replay.lastSequence
            + " (a sequence gap: a segment is missing)"), null);
      }
      Result r = replay.segment(segment, limit, i == segments.size() - 1);
      if (r != null) {
        return r;
      }
    }
    return new Result(replay.lastSequence, null, null);
  }

  /** Replays one segment; returns a final result if the replay must stop here, null to go on. */
  private Result segment(Segment segment, long limit, boolean last) throws IOException {
    byte[] bytes = Files.readAllBytes(segment.path());
    ByteBuffer data = ByteBuffer.wrap(bytes);
    List<Frame> batch = new ArrayList<>();
    int batchStart = 0;
    int pos = 0;
    long previous = segment.firstSequence() - 1;
    String problem; // null: the data ends here (zeros, or stale bytes)
    long failEnd; // where the frame that stops the reading says it ends
    boolean intactButWrong = false; // a CRC-valid frame that does not fit: never what a torn write leaves
    boolean stale = false; // an intact frame of an older file: what a power cut leaves past a file's old end
    while (true) {
      Object read = JournalFormat.read(data, pos);
      if (read instanceof Frame frame && frame.sequence() <= previous) {
        // Intact, so no bit flip made it, and older than what precedes it, so we never wrote it here: bytes of an
        // older file that a power cut left visible in a segment that grew without preallocation. The data ends.
        stale = true;
        read = Problem.END;
      }
      if (read instanceof Frame frame) {
        if (frame.sequence() != previous + 1) {
          problem = "sequence " + frame.sequence() + " follows " + previous + " (a sequence gap)";
          intactButWrong = true;
          failEnd = frame.end();
          break;
        }
        if (frame.begin() != batch.isEmpty()) {
          problem = "sequence " + frame.sequence() + (frame.begin() ? " begins a batch before the last one was committed"
              : " continues a batch that never began");
          intactButWrong = true;
          failEnd = frame.end();
          break;
        }
        previous = frame.sequence();
        if (frame.sequence() >= limit) {
          return null; // superseded by the next segment from here on
        }
        batch.add(frame);
        pos = frame.end();
        if (frame.commit()) {
          if (frame.sequence() > upTo) {
            return new Result(lastSequence, null, null);
          }
          apply(batch);
          batch.clear();
          batchStart = pos;
        }
        continue;
      }
      Problem p = (Problem) read;
      failEnd = JournalFormat.declaredEnd(data, pos);
      if (p == Problem.END && batch.isEmpty()) {
        if (!last) {
          if (previous + 1 != limit) {
            return new Result(lastSequence, new Corruption(segment.path(), pos, "the segment's records end at sequence "
                + previous + " but the next segment starts at " + limit + " (a sequence gap)"), null);
          }
          return null;
        }
        problem = null;
        break;
      }
      problem = p == Problem.END ? null : describe(p);
      intactButWrong = p == Problem.BAD_BODY;
      break;
    }
    if (batch.isEmpty() && previous + 1 == limit) {
      return null; // an abandoned segment: the next one takes over exactly here
    }
    long batchFirst = batch.isEmpty() ? previous + 1 : batch.get(0).sequence();
    int damageAt = problem == null ? pos : batchStart;
    Frame later = laterBatchAfter(data, bytes, pos + (problem == null ? 0 : 1), batchStart, batchFirst);
    if (batchFirst <= base && (later == null || later.sequence() <= base)) {
      return null; // the checkpoint holds this batch and everything before it
    }
    if (!last || intactButWrong) {
      return new Result(lastSequence, new Corruption(segment.path(), damageAt,
          (problem == null ? "the segment ends inside a batch" : problem) + (last ? "" : " before the end of the journal")),
          null);
    }
    if (later != null) {
      return new Result(lastSequence, new Corruption(segment.path(), damageAt, (problem == null ? "the data stops"
          : problem) + ", but a later batch follows it intact (sequence " + later.sequence() + " at byte "
          + later.start() + ")"), null);
    }
    if (problem == null && batch.isEmpty()) {
      return new Result(lastSequence, null, null); // a clean end
    }
    if (!stale && !torn(bytes, batchStart, pos, failEnd)) {
      return new Result(lastSequence, new Corruption(segment.path(), batchStart, (problem == null
          ? "the last batch has no commit mark" : problem) + " in the last batch, and not as a power cut leaves a"
          + " write (the file does not end in it, no sector of it is zeros): bit rot or a bug, and that batch may have"
          + " been acknowledged"), null);
    }
    return new Result(lastSequence, null, "dropped a torn tail at byte " + batchStart + " of " + segment.path()
        + " (" + (batch.isEmpty() ? "" : batch.size() + " record(s) of a batch without its commit mark; ")
        + (problem == null ? "the batch ends early" : problem) + "): a write cut short by a crash, never acknowledged");
  }

  private void apply(List<Frame> batch) {
    for (Frame f : batch) {
      if (f.sequence() <= lastSequence) {
        continue; // the checkpoint holds it already
      }
      if (f.value() == null) {
        records.remove(f.key());
      } else {
        records.put(f.key(), f.value());
      }
    }
    lastSequence = Math.max(lastSequence, batch.get(batch.size() - 1).sequence());
  }

  /**
   * Whether the frame at {@code [at, end)} that stops the last batch (which starts at {@code batchStart}) is what a
   * power cut, or a process killed in the middle of its write, leaves of a write (etcd's rule for a torn record,
   * widened to a write cut short anywhere): the file ends inside the frame; or a 512-byte sector the frame touches
   * holds only zeros from the batch's start on (a sector that never reached the disk: preallocated space, or past
   * the old end of the file); or zeros run from inside the frame to the end of the file (the write reached only a
   * prefix); or the frame holds a run of at least {@value #MIN_ZERO_RUN} zeros (a hole a write left). A record whose
   * own bytes are zeros there cannot be told from one cut short there: etcd's rule has the same blind spot.
   */
  static boolean torn(byte[] bytes, int batchStart, int at, long end) {
    if (end > bytes.length) {
      return true;
    }
    int stop = (int) end;
    for (int sector = at - at % SECTOR; sector < stop; sector += SECTOR) {
      int from = Math.max(batchStart, sector);
      if (isZero(bytes, from, Math.min(sector + SECTOR, bytes.length))) {
        return true;
      }
    }
    if (lastNonZero(bytes, at) + 1 < stop) {
      return true;
    }
    int run = 0;
    for (int i = at; i < stop; i++) {
      run = bytes[i] == 0 ? run + 1 : 0;
      if (run >= MIN_ZERO_RUN) {
        return true;
      }
    }
    return false;
  }

  private static boolean isZero(byte[] bytes, int from, int to) {
    return from < to && lastNonZero(bytes, from, to) < from;
  }

  /**
   * Looks for a later batch after a failing point: an intact frame that begins a batch with a sequence that could
   * follow the failing batch's first one (above it, and at most one record per {@value #MIN_FRAME} bytes past the
   * batch's start). Returns null if there is none (what a torn write leaves: at most the rest of its own batch, or
   * stale frames of an older file, whose sequences do not fit), else that batch's first frame.
   */
  private static Frame laterBatchAfter(ByteBuffer data, byte[] bytes, int from, int batchStart, long batchFirst) {
    int end = lastNonZero(bytes, from) + 1;
    for (int offset = from; offset < end; offset++) {
      if (JournalFormat.read(data, offset) instanceof Frame frame) {
        long most = batchFirst + (offset - batchStart) / MIN_FRAME;
        if (frame.begin() && frame.sequence() > batchFirst && frame.sequence() <= most) {
          return frame;
        }
        offset = frame.end() - 1;
      }
    }
    return null;
  }

  private static final byte[] ZEROS = new byte[1 << 16];

  /** The index of the last non-zero byte at or after {@code from}, or {@code from - 1}. */
  static int lastNonZero(byte[] bytes, int from) {
    return lastNonZero(bytes, from, bytes.length);
  }

  private static int lastNonZero(byte[] bytes, int from, int to) {
    int end = to;
    while (end > from) {
      int start = Math.max(from, end - ZEROS.length);
      if (Arrays.mismatch(bytes, start, end, ZEROS, 0, end - start) >= 0) {
        for (int i = end - 1; i >= start; i--) {
          if (bytes[i] != 0) {
            return i;
          }
        }
      }
      end = start;
    }
    return from - 1;
  }

  private static String describe(Problem p) {
    return switch (p) {
      case END -> "the batch has no commit mark";
      case SHORT -> "a record is cut short";
      case BAD_LENGTH -> "a record has an impossible length";
      case BAD_CRC -> "a record fails its CRC32C check";
      case BAD_BODY -> "a record passes its CRC but is not a valid record";
    };
  }
}
