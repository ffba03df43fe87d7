package dev.csisupervisor.registry;

import dev.csisupervisor.common.PluginIds;
import dev.csisupervisor.common.Printable;
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

  /** A plugin name: a plugin id ({@link PluginIds}), since it names a directory too. */
  static String pluginName(String name) {
    if (!PluginIds.isValid(name)) {
      throw new IllegalArgumentException("name " + PluginIds.problem(name).orElseThrow());
    }
    return name;
  }

  /** An allocation id: not blank, at most 128 characters, no control characters. */
  static String allocId(String allocId) {
    if (allocId == null) {
      throw new IllegalArgumentException("allocId must not be null");
    }
    if (allocId.isBlank()) {
      throw new IllegalArgumentException("allocId must not be blank, got " + Printable.quote(allocId));
    }
    if (allocId.length() > MAX_ALLOC_ID_LENGTH) {
      throw new IllegalArgumentException("allocId must be at most " + MAX_ALLOC_ID_LENGTH + " characters, got "
          + allocId.length() + ": " + Printable.quote(allocId.substring(0, 40)) + "...");
    }
    if (hasControlCharacter(allocId)) {
      throw new IllegalArgumentException("allocId must not contain control characters, got " + Printable.quote(allocId));
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
}
