package dev.csisupervisor.state;

import java.util.Arrays;

/**
 * One change for {@link StateStore#apply(java.util.List)}: a {@link Put} or a {@link Delete} of one key.
 * Immutable; {@link Put} copies its value in and out.
 */
public sealed interface StateChange permits StateChange.Put, StateChange.Delete {

  /** The key this change writes. */
  String key();

  /** Stores {@code value} under {@code key}. */
  record Put(String key, byte[] value) implements StateChange {
    public Put {
      Keys.check(key);
      if (value == null) {
        throw new IllegalArgumentException("value for key '" + key + "' must not be null");
      }
      value = value.clone();
    }

    /** Returns a copy of the value. */
    @Override
    public byte[] value() {
      return value.clone();
    }

    /** The value without a defensive copy, for the stores in this package. */
    byte[] valueUnsafe() {
      return value;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Put other && key.equals(other.key) && Arrays.equals(value, other.value);
    }

    @Override
    public int hashCode() {
      return 31 * key.hashCode() + Arrays.hashCode(value);
    }

    @Override
    public String toString() {
      return "Put[key=" + key + ", " + value.length + " bytes]";
    }
  }

  /** Removes {@code key}; a no-op if it is absent. */
  record Delete(String key) implements StateChange {
    public Delete {
      Keys.check(key);
    }
  }
}
