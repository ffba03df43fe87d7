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
 * but not forced) are ignored once a later segment exists. In the last segment, the first frame that is short,
 * fails its CRC, or leaves a batch without its commit mark is a <b>torn tail</b> when nothing valid follows it
 * beyond the rest of that one batch: the batch was never acknowledged and is dropped. Anything else (damage
 * followed by intact records, a sequence gap, a segment that ends before the next one begins) is
 * <b>corruption</b>: the replay stops there and says where, and the caller decides (strict mode fails,
 * otherwise the rest is moved aside). Not thread-safe; one replay per call.
 */
final class JournalReplay {

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
  private final long upTo;
  private long lastSequence;

  private JournalReplay(Map<String, byte[]> records, long baseSequence, long upTo) {
    this.records = records;
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
    String problem;
    boolean intactButWrong = false; // a CRC-valid frame that does not fit: never what a torn write leaves
    while (true) {
      Object read = JournalFormat.read(data, pos);
      if (read instanceof Frame frame) {
        if (frame.sequence() != previous + 1) {
          problem = "sequence " + frame.sequence() + " follows " + previous + " (a sequence gap)";
          intactButWrong = true;
          break;
        }
        if (frame.begin() != batch.isEmpty()) {
          problem = "sequence " + frame.sequence() + (frame.begin() ? " begins a batch before the last one was committed"
              : " continues a batch that never began");
          intactButWrong = true;
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
      problem = describe(p);
      intactButWrong = p == Problem.BAD_BODY;
      break;
    }
    if (batch.isEmpty() && previous + 1 == limit) {
      return null; // an abandoned segment: the next one takes over exactly here
    }
    int damageAt = problem == null ? pos : batchStart;
    if (!last || intactButWrong) {
      return new Result(lastSequence, new Corruption(segment.path(), damageAt,
          (problem == null ? "the segment ends inside a batch" : problem) + (last ? "" : " before the end of the journal")),
          null);
    }
    // The last segment: a torn tail if nothing but (the rest of) one batch follows the failing point.
    String followers = validFramesAfter(data, pos + (problem == null ? 0 : 1), bytes);
    if (followers != null) {
      return new Result(lastSequence, new Corruption(segment.path(), damageAt,
          (problem == null ? "the data stops" : problem) + ", but " + followers), null);
    }
    if (problem == null && batch.isEmpty()) {
      return new Result(lastSequence, null, null); // a clean end
    }
    return new Result(lastSequence, null, "dropped a torn tail at byte " + batchStart + " of " + segment.path()
        + " (" + (batch.isEmpty() ? "" : batch.size() + " record(s) of a batch without its commit mark; ")
        + (problem == null ? "the batch ends early" : problem) + "): a write cut short by a crash, never acknowledged");
  }

  private void apply(List<Frame> batch) {
    for (Frame f : batch) {
      if (f.value() == null) {
        records.remove(f.key());
      } else {
        records.put(f.key(), f.value());
      }
    }
    lastSequence = batch.get(batch.size() - 1).sequence();
  }

  /**
   * Looks for intact frames after a failing point. Returns null if none of them begins a batch (what a torn write
   * leaves: at most the rest of its own batch), else a description of the later batch.
   */
  private static String validFramesAfter(ByteBuffer data, int from, byte[] bytes) {
    int end = lastNonZero(bytes, from) + 1;
    for (int offset = from; offset < end; offset++) {
      if (JournalFormat.read(data, offset) instanceof Frame frame) {
        if (frame.begin()) {
          return "a later batch follows it intact (sequence " + frame.sequence() + " at byte " + offset + ")";
        }
        offset = frame.end() - 1;
      }
    }
    return null;
  }

  private static final byte[] ZEROS = new byte[1 << 16];

  /** The index of the last non-zero byte at or after {@code from}, or {@code from - 1}. */
  static int lastNonZero(byte[] bytes, int from) {
    int end = bytes.length;
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
