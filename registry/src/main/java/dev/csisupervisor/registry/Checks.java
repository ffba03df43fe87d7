package dev.csisupervisor.registry;

import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** Argument checks shared by the value records; every message names the field and the value. */
final class Checks {
  private Checks() {}

  static final int MAX_ALLOC_ID_LENGTH = 128;

  static <T> T notNull(T value, String field) {
    if (value == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    return value;
  }

  static PluginType type(PluginType type) {
    return notNull(type, "type");
  }

  /** A plugin name: {@code [A-Za-z0-9._-]{1,128}}, and not "." or ".." (it names a directory). */
  static String pluginName(String name) {
    if (name == null) {
      throw new IllegalArgumentException("name must not be null");
    }
    if (name.isBlank()) {
      throw new IllegalArgumentException("name must not be blank, got " + quote(name));
    }
    if (!isPluginName(name) || name.equals(".") || name.equals("..")) {
      throw new IllegalArgumentException("name must match [A-Za-z0-9._-]{1,128} and not be '.' or '..', got " + quote(name));
    }
    return name;
  }

  /** {@code [A-Za-z0-9._-]{1,128}}, as a loop: it runs for every registration a restore decodes. */
  private static boolean isPluginName(String name) {
    int n = name.length();
    if (n < 1 || n > 128) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      char c = name.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
          || c == '-')) {
        return false;
      }
    }
    return true;
  }

  /** An allocation id: not blank, at most 128 characters, no control characters. */
  static String allocId(String allocId) {
    if (allocId == null) {
      throw new IllegalArgumentException("allocId must not be null");
    }
    if (allocId.isBlank()) {
      throw new IllegalArgumentException("allocId must not be blank, got " + quote(allocId));
    }
    if (allocId.length() > MAX_ALLOC_ID_LENGTH) {
      throw new IllegalArgumentException("allocId must be at most " + MAX_ALLOC_ID_LENGTH + " characters, got "
          + allocId.length() + ": " + quote(allocId.substring(0, 40)) + "...");
    }
    if (hasControlCharacter(allocId)) {
      throw new IllegalArgumentException("allocId must not contain control characters, got " + quote(allocId));
    }
    return allocId;
  }

  private static boolean hasControlCharacter(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (Character.isISOControl(s.charAt(i))) {
        return true;
      }
    }
    return false;
  }

  static Map<String, String> stringMap(Map<String, String> map, String field) {
    notNull(map, field);
    if (map.isEmpty()) {
      return Map.of(); // one shared instance: most registrations have no options, topology or manifest
    }
    TreeMap<String, String> copy;
    if (map instanceof java.util.SortedMap<String, String> sorted && sorted.comparator() == null) {
      copy = new TreeMap<>(sorted); // linear: already in order (a decoded record)
      if (copy.containsValue(null)) {
        throw new IllegalArgumentException(field + " must not contain null values");
      }
      return Collections.unmodifiableMap(copy);
    }
    copy = new TreeMap<>();
    for (Map.Entry<String, String> e : map.entrySet()) {
      if (e.getKey() == null || e.getValue() == null) {
        throw new IllegalArgumentException(field + " must not contain null keys or values, got " + e.getKey() + "=" + e.getValue());
      }
      copy.put(e.getKey(), e.getValue());
    }
    return Collections.unmodifiableMap(copy);
  }

  static Set<String> stringSet(Set<String> set, String field) {
    notNull(set, field);
    if (set.isEmpty()) {
      return Set.of();
    }
    TreeSet<String> copy = new TreeSet<>();
    for (String s : set) {
      if (s == null) {
        throw new IllegalArgumentException(field + " must not contain null");
      }
      copy.add(s);
    }
    return Collections.unmodifiableSet(copy);
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("'");
    s.codePoints().forEach(c -> {
      if (Character.isISOControl(c)) {
        b.append(String.format("\\u%04x", c));
      } else {
        b.appendCodePoint(c);
      }
    });
    return b.append('\'').toString();
  }
}
