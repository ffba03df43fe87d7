package dev.csisupervisor.cli;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * HPACK (RFC 7541), as much as one gRPC call needs: a decoder with the static and dynamic tables and
 * Huffman-coded strings (what a server's encoder sends), and an encoder that writes every field as a literal
 * without indexing (always valid, so the client keeps no table of its own). Not thread-safe: one per
 * connection.
 */
final class Hpack {
  /** A header field. */
  record Field(String name, String value) {
    /** Its size in a dynamic table: RFC 7541 section 4.1. */
    int size() {
      return name.getBytes(StandardCharsets.UTF_8).length + value.getBytes(StandardCharsets.UTF_8).length + 32;
    }
  }

  /** The peer's encoder broke the format; the connection cannot go on. */
  static final class HpackException extends Exception {
    private static final long serialVersionUID = 1L;

    HpackException(String message) {
      super(message);
    }
  }

  private final Deque<Field> dynamic = new ArrayDeque<>(); // newest first
  private int dynamicSize;
  private int maxDynamicSize = 4096; // SETTINGS_HEADER_TABLE_SIZE, which this client never changes

  /** The fields of one header block; the dynamic table carries over to the next. */
  List<Field> decode(byte[] block) throws HpackException {
    List<Field> fields = new ArrayList<>();
    int[] pos = {0};
    while (pos[0] < block.length) {
      int b = block[pos[0]] & 0xff;
      if ((b & 0x80) != 0) { // indexed field
        fields.add(field(integer(block, pos, 7)));
      } else if ((b & 0x40) != 0) { // literal with incremental indexing
        Field f = literal(block, pos, 6);
        fields.add(f);
        add(f);
      } else if ((b & 0x20) != 0) { // dynamic table size update
        int size = integer(block, pos, 5);
        if (size > 4096) {
          throw new HpackException("table size update to " + size + " over the 4096 allowed");
        }
        maxDynamicSize = size;
        evict();
      } else { // literal without indexing (0000) or never indexed (0001)
        fields.add(literal(block, pos, 4));
      }
    }
    return fields;
  }

  private Field literal(byte[] block, int[] pos, int prefix) throws HpackException {
    int index = integer(block, pos, prefix);
    String name = index == 0 ? string(block, pos) : field(index).name();
    return new Field(name, string(block, pos));
  }

  private Field field(int index) throws HpackException {
    if (index >= 1 && index <= STATIC.length / 2) {
      return new Field(STATIC[2 * index - 2], STATIC[2 * index - 1]);
    }
    int d = index - STATIC.length / 2 - 1;
    if (index < 1 || d >= dynamic.size()) {
      throw new HpackException("header index " + index + " is not in the table");
    }
    java.util.Iterator<Field> it = dynamic.iterator();
    for (int i = 0; i < d; i++) {
      it.next();
    }
    return it.next();
  }

  private void add(Field f) {
    dynamic.addFirst(f);
    dynamicSize += f.size();
    evict();
  }

  private void evict() {
    while (dynamicSize > maxDynamicSize && !dynamic.isEmpty()) {
      dynamicSize -= dynamic.removeLast().size();
    }
  }

  /** An integer with an N-bit prefix: RFC 7541 section 5.1; one over {@link Integer#MAX_VALUE} is refused. */
  static int integer(byte[] in, int[] pos, int prefix) throws HpackException {
    if (pos[0] >= in.length) {
      throw new HpackException("header block ends before an integer");
    }
    int max = (1 << prefix) - 1;
    int first = in[pos[0]++] & max;
    if (first < max) {
      return first;
    }
    long value = first;
    for (int shift = 0; ; shift += 7) {
      if (pos[0] >= in.length) {
        throw new HpackException("header block ends inside an integer");
      }
      int b = in[pos[0]++] & 0xff;
      value += (long) (b & 0x7f) << shift;
      if (value > Integer.MAX_VALUE || shift >= 28 && (b & 0x80) != 0) {
        throw new HpackException("integer too large in a header block");
      }
      if ((b & 0x80) == 0) {
        return (int) value;
      }
    }
  }

  /** A string literal, Huffman-coded or not: RFC 7541 section 5.2. */
  private static String string(byte[] in, int[] pos) throws HpackException {
    if (pos[0] >= in.length) {
      throw new HpackException("header block ends before a string");
    }
    boolean huffman = (in[pos[0]] & 0x80) != 0;
    int length = integer(in, pos, 7);
    if (length > in.length - pos[0]) {
      throw new HpackException("string of " + length + " bytes past the end of the header block");
    }
    int from = pos[0];
    pos[0] += length;
    byte[] raw = huffman ? huffman(in, from, length) : java.util.Arrays.copyOfRange(in, from, from + length);
    return new String(raw, StandardCharsets.UTF_8);
  }

  private static byte[] huffman(byte[] in, int from, int length) throws HpackException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(length * 8 / 5 + 1);
    long code = 0;
    int bits = 0;
    for (int i = from; i < from + length; i++) {
      for (int bit = 7; bit >= 0; bit--) {
        code = (code << 1) | ((in[i] >> bit) & 1);
        bits++;
        Integer symbol = bits >= 5 ? DECODE.get(((long) bits << 32) | code) : null;
        if (symbol != null) {
          if (symbol == 256) {
            throw new HpackException("EOS in a Huffman-coded string");
          }
          out.write(symbol);
          code = 0;
          bits = 0;
        } else if (bits > 30) {
          throw new HpackException("invalid Huffman code in a header block");
        }
      }
    }
    // What is left must be padding: fewer than 8 bits, all ones (a prefix of EOS).
    if (bits > 7 || code != (1L << bits) - 1) {
      throw new HpackException("invalid Huffman padding in a header block");
    }
    return out.toByteArray();
  }

  /** {@code fields} as one header block of literals without indexing, names and values as they are. */
  static byte[] encode(List<Field> fields) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (Field f : fields) {
      out.write(0); // literal without indexing, new name
      writeString(out, f.name());
      writeString(out, f.value());
    }
    return out.toByteArray();
  }

  private static void writeString(ByteArrayOutputStream out, String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    writeInteger(out, b.length, 7, 0);
    out.write(b, 0, b.length);
  }

  static void writeInteger(ByteArrayOutputStream out, int value, int prefix, int flags) {
    int max = (1 << prefix) - 1;
    if (value < max) {
      out.write(flags | value);
      return;
    }
    out.write(flags | max);
    value -= max;
    while (value >= 0x80) {
      out.write((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    out.write(value);
  }

  /** RFC 7541 Appendix A: name, value of entries 1 to 61. */
  private static final String[] STATIC = {
      ":authority", "",
      ":method", "GET",
      ":method", "POST",
      ":path", "/",
      ":path", "/index.html",
      ":scheme", "http",
      ":scheme", "https",
      ":status", "200",
      ":status", "204",
      ":status", "206",
      ":status", "304",
      ":status", "400",
      ":status", "404",
      ":status", "500",
      "accept-charset", "",
      "accept-encoding", "gzip, deflate",
      "accept-language", "",
      "accept-ranges", "",
      "accept", "",
      "access-control-allow-origin", "",
      "age", "",
      "allow", "",
      "authorization", "",
      "cache-control", "",
      "content-disposition", "",
      "content-encoding", "",
      "content-language", "",
      "content-length", "",
      "content-location", "",
      "content-range", "",
      "content-type", "",
      "cookie", "",
      "date", "",
      "etag", "",
      "expect", "",
      "expires", "",
      "from", "",
      "host", "",
      "if-match", "",
      "if-modified-since", "",
      "if-none-match", "",
      "if-range", "",
      "if-unmodified-since", "",
      "last-modified", "",
      "link", "",
      "location", "",
      "max-forwards", "",
      "proxy-authenticate", "",
      "proxy-authorization", "",
      "range", "",
      "referer", "",
      "refresh", "",
      "retry-after", "",
      "server", "",
      "set-cookie", "",
      "strict-transport-security", "",
      "transfer-encoding", "",
      "user-agent", "",
      "vary", "",
      "via", "",
      "www-authenticate", "",
  };

  // RFC 7541 Appendix B: the Huffman code of each symbol 0..256 (256 = EOS) and its length in bits.
  private static final int[] CODES = {
      0x1ff8, 0x7fffd8, 0xfffffe2, 0xfffffe3, 0xfffffe4, 0xfffffe5, 0xfffffe6, 0xfffffe7,
      0xfffffe8, 0xffffea, 0x3ffffffc, 0xfffffe9, 0xfffffea, 0x3ffffffd, 0xfffffeb, 0xfffffec,
      0xfffffed, 0xfffffee, 0xfffffef, 0xffffff0, 0xffffff1, 0xffffff2, 0x3ffffffe, 0xffffff3,
      0xffffff4, 0xffffff5, 0xffffff6, 0xffffff7, 0xffffff8, 0xffffff9, 0xffffffa, 0xffffffb,
      0x14, 0x3f8, 0x3f9, 0xffa, 0x1ff9, 0x15, 0xf8, 0x7fa,
      0x3fa, 0x3fb, 0xf9, 0x7fb, 0xfa, 0x16, 0x17, 0x18,
      0x0, 0x1, 0x2, 0x19, 0x1a, 0x1b, 0x1c, 0x1d,
      0x1e, 0x1f, 0x5c, 0xfb, 0x7ffc, 0x20, 0xffb, 0x3fc,
      0x1ffa, 0x21, 0x5d, 0x5e, 0x5f, 0x60, 0x61, 0x62,
      0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
      0x6b, 0x6c, 0x6d, 0x6e, 0x6f, 0x70, 0x71, 0x72,
      0xfc, 0x73, 0xfd, 0x1ffb, 0x7fff0, 0x1ffc, 0x3ffc, 0x22,
      0x7ffd, 0x3, 0x23, 0x4, 0x24, 0x5, 0x25, 0x26,
      0x27, 0x6, 0x74, 0x75, 0x28, 0x29, 0x2a, 0x7,
      0x2b, 0x76, 0x2c, 0x8, 0x9, 0x2d, 0x77, 0x78,
      0x79, 0x7a, 0x7b, 0x7ffe, 0x7fc, 0x3ffd, 0x1ffd, 0xffffffc,
      0xfffe6, 0x3fffd2, 0xfffe7, 0xfffe8, 0x3fffd3, 0x3fffd4, 0x3fffd5, 0x7fffd9,
      0x3fffd6, 0x7fffda, 0x7fffdb, 0x7fffdc, 0x7fffdd, 0x7fffde, 0xffffeb, 0x7fffdf,
      0xffffec, 0xffffed, 0x3fffd7, 0x7fffe0, 0xffffee, 0x7fffe1, 0x7fffe2, 0x7fffe3,
      0x7fffe4, 0x1fffdc, 0x3fffd8, 0x7fffe5, 0x3fffd9, 0x7fffe6, 0x7fffe7, 0xffffef,
      0x3fffda, 0x1fffdd, 0xfffe9, 0x3fffdb, 0x3fffdc, 0x7fffe8, 0x7fffe9, 0x1fffde,
      0x7fffea, 0x3fffdd, 0x3fffde, 0xfffff0, 0x1fffdf, 0x3fffdf, 0x7fffeb, 0x7fffec,
      0x1fffe0, 0x1fffe1, 0x3fffe0, 0x1fffe2, 0x7fffed, 0x3fffe1, 0x7fffee, 0x7fffef,
      0xfffea, 0x3fffe2, 0x3fffe3, 0x3fffe4, 0x7ffff0, 0x3fffe5, 0x3fffe6, 0x7ffff1,
      0x3ffffe0, 0x3ffffe1, 0xfffeb, 0x7fff1, 0x3fffe7, 0x7ffff2, 0x3fffe8, 0x1ffffec,
      0x3ffffe2, 0x3ffffe3, 0x3ffffe4, 0x7ffffde, 0x7ffffdf, 0x3ffffe5, 0xfffff1, 0x1ffffed,
      0x7fff2, 0x1fffe3, 0x3ffffe6, 0x7ffffe0, 0x7ffffe1, 0x3ffffe7, 0x7ffffe2, 0xfffff2,
      0x1fffe4, 0x1fffe5, 0x3ffffe8, 0x3ffffe9, 0xffffffd, 0x7ffffe3, 0x7ffffe4, 0x7ffffe5,
      0xfffec, 0xfffff3, 0xfffed, 0x1fffe6, 0x3fffe9, 0x1fffe7, 0x1fffe8, 0x7ffff3,
      0x3fffea, 0x3fffeb, 0x1ffffee, 0x1ffffef, 0xfffff4, 0xfffff5, 0x3ffffea, 0x7ffff4,
      0x3ffffeb, 0x7ffffe6, 0x3ffffec, 0x3ffffed, 0x7ffffe7, 0x7ffffe8, 0x7ffffe9, 0x7ffffea,
      0x7ffffeb, 0xffffffe, 0x7ffffec, 0x7ffffed, 0x7ffffee, 0x7ffffef, 0x7fffff0, 0x3ffffee,
      0x3fffffff,
  };
  private static final byte[] LENGTHS = {
      13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
      28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
      6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
      5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
      13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
      7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
      15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
      6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
      20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
      24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
      22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
      21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
      26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
      19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
      20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
      26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
      30,
  };

  /** (bit length << 32 | code) to symbol, from RFC 7541 Appendix B (after the tables it reads). */
  private static final Map<Long, Integer> DECODE = new HashMap<>(512);

  static {
    for (int symbol = 0; symbol < CODES.length; symbol++) {
      DECODE.put(((long) LENGTHS[symbol] << 32) | (CODES[symbol] & 0xffffffffL), symbol);
    }
  }

}
