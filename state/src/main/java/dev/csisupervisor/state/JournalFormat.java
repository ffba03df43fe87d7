package dev.csisupervisor.state;

import dev.csisupervisor.common.Printable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

/**
 * The journal's record frame, in one screen. Big-endian:
 * <pre>
 * frame = u32 bodyLength | u32 crc32c(body) | body
 * body  = u64 sequence | u8 op | u16 keyLength | key (UTF-8) | value (the rest of the body; empty for DELETE)
 * op    = 1 PUT | 2 DELETE, plus 0x40 on the first record of a batch and 0x80 on its last (the commit mark)
 * </pre>
 * Sequences grow by one per record across all segments. A batch ({@link StateStore#apply}) counts only if its
 * last record, the one with the commit mark, is intact: a batch cut short by a crash is dropped whole. The
 * begin mark tells a torn tail (damage followed at most by the rest of its own batch) from damage followed by a
 * later batch, which is corruption. A frame
 * whose length word is 0 marks the end of a segment's data (segments are preallocated with zeros).
 */
final class JournalFormat {
  static final int HEADER = 8; // bodyLength + crc
  static final int BODY_FIXED = 8 + 1 + 2; // sequence + op + keyLength
  static final int MAX_KEY_BYTES = 0xffff;
  /** No body is larger: a length word above this is damage, not a record (it must not allocate gigabytes). */
  static final int MAX_BODY = 64 << 20;

  static final byte PUT = 1;
  static final byte DELETE = 2;
  static final byte BEGIN = 0x40;
  static final byte COMMIT = (byte) 0x80;
  private static final byte FLAGS = BEGIN | COMMIT;

  private JournalFormat() {}

  /** The UTF-8 key, checked against the u16 length field. */
  static byte[] keyBytes(String key) {
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    if (k.length > MAX_KEY_BYTES) {
      throw new IllegalArgumentException("key " + Printable.quote(key.substring(0, 40)) + "... is " + k.length
          + " bytes in UTF-8, over the limit of " + MAX_KEY_BYTES);
    }
    return k;
  }

  static int frameSize(byte[] key, byte[] value) {
    return HEADER + BODY_FIXED + key.length + (value == null ? 0 : value.length);
  }

  /** Appends one frame at the buffer's position; {@code value == null} writes a DELETE. */
  static void write(ByteBuffer out, long sequence, byte[] key, byte[] value, boolean begin, boolean commit) {
    int start = out.position();
    int bodyLength = BODY_FIXED + key.length + (value == null ? 0 : value.length);
    out.putInt(bodyLength).putInt(0); // crc patched below
    int bodyStart = out.position();
    out.putLong(sequence);
    out.put((byte) ((value == null ? DELETE : PUT) | (begin ? BEGIN : 0) | (commit ? COMMIT : 0)));
    out.putShort((short) key.length);
    out.put(key);
    if (value != null) {
      out.put(value);
    }
    out.putInt(start + 4, crc(out, bodyStart, bodyLength));
  }

  static int crc(ByteBuffer buffer, int offset, int length) {
    CRC32C crc = new CRC32C();
    ByteBuffer view = buffer.duplicate();
    view.limit(offset + length).position(offset);
    crc.update(view);
    return (int) crc.getValue();
  }

  /** One decoded frame at {@code [start, end)}; {@code value} is null for a DELETE. */
  record Frame(long sequence, boolean begin, boolean commit, String key, byte[] value, int start, int end) {}

  /** Why the bytes at an offset are not a frame; {@code END} is the zero-filled end of a segment's data. */
  enum Problem { END, SHORT, BAD_LENGTH, BAD_CRC, BAD_BODY }

  /** The frame at {@code offset}, or the problem that stops reading there. */
  static Object read(ByteBuffer data, int offset) {
    int limit = data.limit();
    if (limit - offset < HEADER) {
      return isZero(data, offset, limit) ? Problem.END : Problem.SHORT;
    }
    int bodyLength = data.getInt(offset);
    int storedCrc = data.getInt(offset + 4);
    if (bodyLength == 0 && storedCrc == 0) {
      return Problem.END;
    }
    if (bodyLength < BODY_FIXED + 1 || bodyLength > MAX_BODY) {
      return Problem.BAD_LENGTH;
    }
    int bodyStart = offset + HEADER;
    if (bodyLength > limit - bodyStart) {
      return Problem.SHORT;
    }
    if (crc(data, bodyStart, bodyLength) != storedCrc) {
      return Problem.BAD_CRC;
    }
    long sequence = data.getLong(bodyStart);
    byte op = data.get(bodyStart + 8);
    int keyLength = data.getShort(bodyStart + 9) & 0xffff;
    int valueLength = bodyLength - BODY_FIXED - keyLength;
    byte kind = (byte) (op & ~FLAGS);
    if (keyLength == 0 || valueLength < 0 || (kind != PUT && kind != DELETE) || (kind == DELETE && valueLength != 0)
        || sequence < 1) {
      return Problem.BAD_BODY; // a CRC-valid body we never write: a bug or a foreign file, never guessed at
    }
    int keyStart = bodyStart + BODY_FIXED;
    String key = StandardCharsets.UTF_8.decode(data.slice(keyStart, keyLength)).toString();
    byte[] value = null;
    if (kind == PUT) {
      value = new byte[valueLength];
      data.get(keyStart + keyLength, value);
    }
    return new Frame(sequence, (op & BEGIN) != 0, (op & COMMIT) != 0, key, value, offset, bodyStart + bodyLength);
  }

  /**
   * Where the frame at {@code offset} says it ends: past its header by its length word, or at the end of its header
   * when the length is impossible. Beyond the data's limit when the data ends inside it.
   */
  static long declaredEnd(ByteBuffer data, int offset) {
    if (data.limit() - offset < HEADER) {
      return offset + HEADER;
    }
    int bodyLength = data.getInt(offset);
    return bodyLength < BODY_FIXED + 1 || bodyLength > MAX_BODY ? offset + HEADER : offset + HEADER + (long) bodyLength;
  }

  static boolean isZero(ByteBuffer data, int from, int to) {
    for (int i = from; i < to; i++) {
      if (data.get(i) != 0) {
        return false;
      }
    }
    return true;
  }
}
