package dev.csisupervisor.state;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A durable map from string keys to byte values.
 *
 * <p>Every mutating call is a commit: when it returns normally the change survives a crash of the process
 * (kill -9), and when it throws {@link StateStoreException} nothing changed. Each change writes only its own
 * key, so the cost of a change does not grow with the number of records.
 *
 * <p>Implementations are thread-safe; concurrent calls are serialized, each in its own commit. To share one
 * commit among several changes, pass them to {@link #apply(List)}. Values are copied on the way in and out;
 * callers may reuse their arrays.
 *
 * <p>After {@link #close()} every other method throws {@link IllegalStateException}.
 */
public interface StateStore extends AutoCloseable {

  /**
   * Stores {@code value} under {@code key}, replacing any previous value; durable when it returns.
   *
   * @throws IllegalArgumentException if the key is null or blank or the value is null
   * @throws StateStoreException if the commit fails (then the store is unchanged)
   */
  default void put(String key, byte[] value) {
    apply(List.of(new StateChange.Put(key, Keys.checkValue(Keys.check(key), value))));
  }

  /**
   * Removes {@code key}; durable when it returns. Removing an unknown key is a no-op.
   *
   * @throws IllegalArgumentException if the key is null or blank
   * @throws StateStoreException if the commit fails (then the store is unchanged)
   */
  default void delete(String key) {
    apply(List.of(new StateChange.Delete(key)));
  }

  /** Returns a copy of the value stored under {@code key}, if any. */
  Optional<byte[]> get(String key);

  /** Returns a snapshot copy of every record; later changes to the store do not show in it. */
  Map<String, byte[]> loadAll();

  /**
   * Returns a snapshot copy of the records whose key starts with {@code prefix}. For a module that
   * owns a key prefix beside another's (the volume manager's {@code volume/} beside the registry's
   * records): a store that keeps what it read at open for the first {@link #loadAll()} serves this
   * from there too, without handing those records over, so both restore from one read of the
   * files. The default filters {@link #loadAll()}.
   *
   * @throws IllegalArgumentException if the prefix is null
   */
  default Map<String, byte[]> loadAll(String prefix) {
    if (prefix == null) {
      throw new IllegalArgumentException("prefix must not be null");
    }
    Map<String, byte[]> matching = new java.util.HashMap<>();
    loadAll().forEach((k, v) -> {
      if (k.startsWith(prefix)) {
        matching.put(k, v);
      }
    });
    return matching;
  }

  /**
   * Applies every change, in list order, in ONE atomic commit: after a crash either all of them are
   * present or none. An empty list is a no-op. A later change to the same key wins.
   *
   * @throws IllegalArgumentException if the list or an element is null
   * @throws StateStoreException if the commit fails (then the store is unchanged)
   */
  void apply(List<StateChange> changes);

  /** Releases the store (and its file lock). Idempotent. */
  @Override
  void close();
}
