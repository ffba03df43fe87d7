package dev.csisupervisor.registry;

import dev.csisupervisor.registry.PluginRecordCodec.RecordFormatException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Shares equal values among the registrations of one restore: most registrations of a node repeat a handful of
 * plugin names, versions, option strings, health values and fingerprints, and a fingerprint (capability sets,
 * topology) is the largest part of a registration in memory. A fingerprint is looked up by its encoded bytes,
 * so one seen before is not decoded again. Not thread-safe: one per restore, dropped after it.
 */
final class Interner {
  /** Reads one encoded value from a buffer. */
  interface Reader<T> {
    T read(ByteBuffer in) throws RecordFormatException;
  }

  static final int MAX_STRINGS = 4096;

  private final Map<String, String> strings = new HashMap<>();
  private final Map<PluginHealth, PluginHealth> healths = new HashMap<>();
  private final Map<ByteBuffer, Fingerprint> fingerprints = new HashMap<>();
  private final Fingerprint[] recent = new Fingerprint[16];
  private final byte[][] recentBytes = new byte[16][];
  private int recentCount;

  /**
   * A string equal to {@code s}, shared if one was seen. Only the first {@value #MAX_STRINGS} distinct strings are
   * remembered: a node repeats a handful of names and values, and past that the strings are unique per
   * registration, where remembering them would only cost time.
   */
  String string(String s) {
    String shared = strings.get(s);
    if (shared != null) {
      return shared;
    }
    if (strings.size() < MAX_STRINGS) {
      strings.put(s, s);
    }
    return s;
  }

  PluginHealth health(PluginHealth h) {
    PluginHealth shared = healths.putIfAbsent(h, h);
    return shared == null ? h : shared;
  }

  /**
   * The fingerprint encoded at the buffer's position (which it moves past), shared if its bytes were seen. The
   * first few distinct ones are compared byte for byte (a vectorized compare, no hashing): a node has few.
   */
  Fingerprint fingerprint(ByteBuffer in, Reader<Fingerprint> reader) throws RecordFormatException {
    int start = in.position();
    PluginRecordCodec.skipFingerprint(in);
    int end = in.position();
    byte[] array = in.array();
    int from = in.arrayOffset() + start;
    int to = in.arrayOffset() + end;
    for (int i = 0; i < recentCount; i++) {
      byte[] r = recentBytes[i];
      if (Arrays.equals(r, 0, r.length, array, from, to)) {
        return recent[i];
      }
    }
    ByteBuffer bytes = null;
    if (recentCount == recent.length) {
      bytes = ByteBuffer.wrap(array, from, to - from).slice();
      Fingerprint shared = fingerprints.get(bytes);
      if (shared != null) {
        return shared;
      }
    }
    in.position(start);
    Fingerprint decoded = reader.read(in);
    if (in.position() != end) {
      throw new RecordFormatException("fingerprint decodes to " + (in.position() - start) + " bytes, not "
          + (end - start));
    }
    if (bytes == null) {
      recentBytes[recentCount] = Arrays.copyOfRange(array, from, to);
      recent[recentCount++] = decoded;
    } else {
      fingerprints.put(bytes, decoded);
    }
    return decoded;
  }
}
