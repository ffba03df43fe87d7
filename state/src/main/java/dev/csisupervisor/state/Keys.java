package dev.csisupervisor.state;

/** Argument checks shared by the stores. */
final class Keys {
  private Keys() {}

  static String check(String key) {
    if (key == null || key.isBlank()) {
      throw new IllegalArgumentException("key must not be null or blank, got " + (key == null ? "null" : quote(key)));
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

  static byte[] checkValue(String key, byte[] value) {
    if (value == null) {
      throw new IllegalArgumentException("value for key " + quote(key) + " must not be null");
    }
    return value;
  }

  /** The key in quotes with control characters escaped, so an error message stays one line. */
  static String quote(String key) {
    StringBuilder sb = new StringBuilder("'");
    for (char c : key.toCharArray()) {
      sb.append(Character.isISOControl(c) ? String.format("\\u%04x", (int) c) : String.valueOf(c));
    }
    return sb.append('\'').toString();
  }
}
