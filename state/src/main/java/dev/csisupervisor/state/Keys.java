package dev.csisupervisor.state;

import dev.csisupervisor.common.Printable;

/** Argument checks shared by the stores. */
final class Keys {
  private Keys() {}

  static String check(String key) {
    if (key == null || key.isBlank()) {
      throw new IllegalArgumentException("key must not be null or blank, got " + Printable.quote(key));
    }
    return key;
  }

  static void checkChanges(java.util.List<StateChange> changes) {
    if (changes == null) {
      throw new IllegalArgumentException("changes must not be null");
    }
    for (int i = 0; i < changes.size(); i++) {
      if (changes.get(i) == null) {
        throw new IllegalArgumentException("changes[" + i + "] must not be null");
      }
    }
  }

  /** The key's length in UTF-8 against the journal's limit (a key of at most a third of it in chars always fits). */
  static void checkLength(String key) {
    if (key.length() > JournalFormat.MAX_KEY_BYTES / 3) {
      JournalFormat.keyBytes(key);
    }
  }

  static byte[] checkValue(String key, byte[] value) {
    if (value == null) {
      throw new IllegalArgumentException("value for key " + Printable.quote(key) + " must not be null");
    }
    return value;
  }
}
