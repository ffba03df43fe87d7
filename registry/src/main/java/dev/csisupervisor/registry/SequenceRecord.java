package dev.csisupervisor.registry;

import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * The last event sequence number of one plugin type, kept in the state store under
 * {@code registry/sequence/<type id>} as a big-endian u64, so that numbering goes on after a restart instead of
 * starting again at 1: a watcher that resumes after a restart can tell old events from new ones. Written in the
 * same commit as the changes whose events it counts.
 */
final class SequenceRecord {
  static final String PREFIX = "registry/sequence/";

  private SequenceRecord() {}

  static String key(PluginType type) {
    return PREFIX + type.id();
  }

  static byte[] encode(long sequence) {
    return ByteBuffer.allocate(8).putLong(sequence).array();
  }

  /** The type a sequence key names, if it is one this code knows. */
  static Optional<PluginType> typeOf(String key) {
    try {
      return Optional.of(PluginType.parse(key.substring(PREFIX.length())));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  static long decode(byte[] value) throws PluginRecordCodec.RecordFormatException {
    if (value.length != 8) {
      throw new PluginRecordCodec.RecordFormatException("a sequence record is 8 bytes, got " + value.length);
    }
    long sequence = ByteBuffer.wrap(value).getLong();
    if (sequence < 0) {
      throw new PluginRecordCodec.RecordFormatException("a sequence must be >= 0, got " + sequence);
    }
    return sequence;
  }
}
