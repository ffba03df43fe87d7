package dev.csisupervisor.registry;

import dev.csisupervisor.common.Printable;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.TreeMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Encodes one registration as a state store value. The first byte is the format version; this code writes and
 * reads version {@value #VERSION_1} only. A record with another version, or one that does not decode exactly
 * (short, trailing bytes, bad UTF-8, invalid field values, content for another key), is a
 * {@link RecordFormatException}: the registry reports it with its key and skips it — it never guesses.
 *
 * <p>Version 1, big-endian: {@code u8 version=1}; strings are {@code u32 byte length + UTF-8}; maps are
 * {@code u32 count + (key, value)*}; sets are {@code u32 count + string*}:
 * <pre>
 * type-id name version allocId socketPath options:map
 * fingerprint: name vendorVersion manifest:map pluginCaps:set controllerCaps:set nodeCaps:set nodeId
 *              maxVolumesPerNode:i64 accessibleTopology:map
 * health: healthy:u8(0|1) message sinceEpochSecond:i64 sinceNano:i32
 * registrationOrder:i64
 * </pre>
 * The {@code restored} flag is runtime state and is not stored. Stateless and thread-safe.
 */
final class PluginRecordCodec {
  static final byte VERSION_1 = 1;

  private PluginRecordCodec() {}

  /** A decoded record: the registration and its persisted registration order (for "newest"). */
  record Decoded(PluginInfo info, long registrationOrder) {}

  /** A record that cannot be read; the message says why (the caller adds the key). */
  static final class RecordFormatException extends Exception {
    private static final long serialVersionUID = 1L;

    RecordFormatException(String message) {
      super(message);
    }

    RecordFormatException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  static byte[] encode(PluginInfo info, long registrationOrder) {
    try {
      ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
      DataOutputStream out = new DataOutputStream(bytes);
      out.writeByte(VERSION_1);
      writeString(out, info.type().id());
      writeString(out, info.name());
      writeString(out, info.version());
      writeString(out, info.allocId());
      writeString(out, info.socketPath().toString());
      writeMap(out, info.options());
      Fingerprint f = info.fingerprint();
      writeString(out, f.name());
      writeString(out, f.vendorVersion());
      writeMap(out, f.manifest());
      writeSet(out, f.pluginCapabilities());
      writeSet(out, f.controllerCapabilities());
      writeSet(out, f.nodeCapabilities());
      writeString(out, f.nodeId());
      out.writeLong(f.maxVolumesPerNode());
      writeMap(out, f.accessibleTopology());
      PluginHealth h = info.health();
      out.writeByte(h.healthy() ? 1 : 0);
      writeString(out, h.message());
      out.writeLong(h.since().getEpochSecond());
      out.writeInt(h.since().getNano());
      out.writeLong(registrationOrder);
      out.flush();
      return bytes.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot happen: writing to memory", e);
    }
  }

  /**
   * Decodes the record stored under {@code key}.
   *
   * @throws RecordFormatException if the version is unknown or the bytes are not exactly one valid record for
   *     {@code key}
   */
  static Decoded decode(String key, byte[] value) throws RecordFormatException {
    return decode(key, value, null);
  }

  /**
   * Decodes a record for a restore: the registration comes back {@link PluginInfo#restored() restored}, and equal
   * names, versions, option strings, health values and fingerprints are shared through {@code interner} (a
   * fingerprint already seen is not decoded again: its bytes are looked up).
   */
  static Decoded decodeRestored(String key, byte[] value, Interner interner) throws RecordFormatException {
    return decode(key, value, interner);
  }

  private static Decoded decode(String key, byte[] value, Interner interner) throws RecordFormatException {
    if (value == null || value.length == 0) {
      throw new RecordFormatException("empty record (no format version byte)");
    }
    int version = value[0] & 0xff;
    if (version != VERSION_1) {
      throw new RecordFormatException("unknown record format version " + version + " (this agent reads version " + VERSION_1 + ")");
    }
    ByteBuffer in = ByteBuffer.wrap(value, 1, value.length - 1);
    Decoded decoded;
    try {
      PluginType type = PluginType.parse(readString(in));
      String name = readString(in);
      String pluginVersion = readString(in);
      String allocId = readString(in);
      Path socket = Path.of(readString(in));
      Map<String, String> options = readMap(in, interner);
      Fingerprint fingerprint = interner == null ? readFingerprint(in) : interner.fingerprint(in, PluginRecordCodec::readFingerprint);
      if (interner != null) {
        name = interner.string(name);
        pluginVersion = interner.string(pluginVersion);
      }
      int healthy = in.get();
      if (healthy != 0 && healthy != 1) {
        throw new RecordFormatException("health flag must be 0 or 1, got " + healthy);
      }
      String message = readString(in);
      long sinceSeconds = in.getLong();
      int sinceNanos = in.getInt();
      if (sinceNanos < 0 || sinceNanos > 999_999_999) {
        throw new RecordFormatException("health.since nanos must be 0..999999999, got " + sinceNanos);
      }
      Instant since = Instant.ofEpochSecond(sinceSeconds, sinceNanos);
      long order = in.getLong();
      PluginHealth health = new PluginHealth(healthy == 1, message, since);
      PluginInfo info = new PluginInfo(type, name, pluginVersion, allocId, socket, options, fingerprint,
          interner == null ? health : interner.health(health), interner != null);
      decoded = new Decoded(info, order);
    } catch (BufferUnderflowException e) {
      throw new RecordFormatException("record is truncated", e);
    } catch (IllegalArgumentException | DateTimeException e) {
      throw new RecordFormatException("record holds an invalid value: " + e.getMessage(), e);
    }
    if (in.hasRemaining()) {
      throw new RecordFormatException(in.remaining() + " unexpected trailing byte(s)");
    }
    String expectedKey = decoded.info().key().storeKey();
    if (!expectedKey.equals(key)) {
      throw new RecordFormatException("record content is for key " + Printable.quote(expectedKey));
    }
    return decoded;
  }

  static Fingerprint readFingerprint(ByteBuffer in) throws RecordFormatException {
    return new Fingerprint(readString(in), readString(in), readMap(in), readSet(in), readSet(in), readSet(in),
        readString(in), in.getLong(), readMap(in));
  }

  /** Moves past an encoded fingerprint without decoding it (for looking its bytes up). */
  static void skipFingerprint(ByteBuffer in) throws RecordFormatException {
    skipString(in);
    skipString(in);
    skipStrings(in, 2);
    skipStrings(in, 1);
    skipStrings(in, 1);
    skipStrings(in, 1);
    skipString(in);
    in.getLong();
    skipStrings(in, 2);
  }

  private static void skipStrings(ByteBuffer in, int perItem) throws RecordFormatException {
    int count = readCount(in, 4 * perItem);
    for (int i = 0; i < count * perItem; i++) {
      skipString(in);
    }
  }

  private static void skipString(ByteBuffer in) throws RecordFormatException {
    int length = in.getInt();
    if (length < 0 || length > in.remaining()) {
      throw new RecordFormatException("string length " + length + " exceeds the " + in.remaining() + " byte(s) left");
    }
    in.position(in.position() + length);
  }

  private static void writeString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  private static void writeMap(DataOutputStream out, Map<String, String> map) throws IOException {
    out.writeInt(map.size());
    for (Map.Entry<String, String> e : map.entrySet()) {
      writeString(out, e.getKey());
      writeString(out, e.getValue());
    }
  }

  private static void writeSet(DataOutputStream out, Set<String> set) throws IOException {
    out.writeInt(set.size());
    for (String s : set) {
      writeString(out, s);
    }
  }

  private static String readString(ByteBuffer in) throws RecordFormatException {
    int length = in.getInt();
    // Check against what is left before allocating: a damaged length must not allocate gigabytes.
    if (length < 0 || length > in.remaining()) {
      throw new RecordFormatException("string length " + length + " exceeds the " + in.remaining() + " byte(s) left");
    }
    int start = in.position();
    in.position(start + length);
    if (in.hasArray() && isAscii(in.array(), in.arrayOffset() + start, length)) {
      // The common case, and ten times faster than a strict decoder: ASCII is valid UTF-8 as it is.
      return new String(in.array(), in.arrayOffset() + start, length, StandardCharsets.US_ASCII);
    }
    ByteBuffer slice = in.duplicate().position(start).limit(start + length).slice();
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(slice)
          .toString();
    } catch (CharacterCodingException e) {
      throw new RecordFormatException("string is not valid UTF-8", e);
    }
  }

  private static boolean isAscii(byte[] bytes, int from, int length) {
    for (int i = from; i < from + length; i++) {
      if (bytes[i] < 0) {
        return false;
      }
    }
    return true;
  }

  private static int readCount(ByteBuffer in, int minBytesPerItem) throws RecordFormatException {
    int count = in.getInt();
    if (count < 0 || (long) count * minBytesPerItem > in.remaining()) {
      throw new RecordFormatException("collection size " + count + " does not fit the " + in.remaining() + " byte(s) left");
    }
    return count;
  }

  private static Map<String, String> readMap(ByteBuffer in) throws RecordFormatException {
    return readMap(in, null);
  }

  private static Map<String, String> readMap(ByteBuffer in, Interner interner) throws RecordFormatException {
    int count = readCount(in, 8);
    if (count == 0) {
      return Map.of();
    }
    Map<String, String> map = new TreeMap<>(); // sorted as the record keeps it: the copy into PluginInfo is linear
    for (int i = 0; i < count; i++) {
      String k = readString(in);
      String v = readString(in);
      if (interner != null) {
        k = interner.string(k);
        v = interner.string(v);
      }
      if (map.put(k, v) != null) {
        throw new RecordFormatException("duplicate map key " + Printable.quote(k));
      }
    }
    return map;
  }

  private static Set<String> readSet(ByteBuffer in) throws RecordFormatException {
    int count = readCount(in, 4);
    Set<String> set = new LinkedHashSet<>();
    for (int i = 0; i < count; i++) {
      String s = readString(in);
      if (!set.add(s)) {
        throw new RecordFormatException("duplicate set element " + Printable.quote(s));
      }
    }
    return set;
  }
}
