package dev.csisupervisor.catalog;

import dev.csisupervisor.catalog.etcdpb.KeyValue;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Values decoded from etcd keys, each kept with the mod revision it was decoded at: the mirror ({@link
 * VolumesInformer}) decodes a key once per change, not once per snapshot, so a snapshot of 20 000 keys after one
 * change costs one decode and a copy of references. A value that does not read is remembered too (its message,
 * thrown again as {@link IllegalArgumentException}). Not thread-safe: used under its mirror's lock, or fresh for
 * one direct read.
 */
final class DecodeMemo {
  private record Entry(long modRevision, Object value, String error) {}

  private final Map<String, Entry> entries = new HashMap<>();

  /**
   * The value of {@code kv} as {@code decode} makes it, decoded again only if the key changed since.
   *
   * @throws IllegalArgumentException if it does not read (now or when it was decoded)
   */
  @SuppressWarnings("unchecked")
  <T> T get(KeyValue kv, Supplier<T> decode) {
    String key = kv.getKey().toStringUtf8();
    Entry e = entries.get(key);
    if (e == null || e.modRevision() != kv.getModRevision()) {
      try {
        e = new Entry(kv.getModRevision(), decode.get(), null);
      } catch (IllegalArgumentException bad) {
        e = new Entry(kv.getModRevision(), null, String.valueOf(bad.getMessage()));
      }
      entries.put(key, e);
    }
    if (e.error() != null) {
      throw new IllegalArgumentException(e.error());
    }
    return (T) e.value();
  }

  /** Forgets a key (deleted). */
  void forget(String key) {
    entries.remove(key);
  }

  /** Forgets every key but {@code present} (after a list). */
  void retain(Set<String> present) {
    entries.keySet().retainAll(present);
  }
}
