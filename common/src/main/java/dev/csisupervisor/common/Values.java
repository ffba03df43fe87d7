package dev.csisupervisor.common;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Checks and defensive copies for value records, each naming its field: immutable sorted copies (a stable
 * toString) without nulls, a string that is not blank, an absolute path.
 */
public final class Values {
  private Values() {}

  public static SortedMap<String, String> copyOf(Map<String, String> map, String field) {
    Objects.requireNonNull(map, field);
    TreeMap<String, String> copy = new TreeMap<>();
    map.forEach((k, v) -> {
      if (k == null || v == null) {
        throw new IllegalArgumentException(field + " must not contain null keys or values, got " + map);
      }
      copy.put(k, v);
    });
    return Collections.unmodifiableSortedMap(copy);
  }

  public static SortedSet<String> copyOf(Set<String> set, String field) {
    Objects.requireNonNull(set, field);
    TreeSet<String> copy = new TreeSet<>();
    for (String s : set) {
      if (s == null || s.isBlank()) {
        throw new IllegalArgumentException(field + " must not contain null or blank entries, got " + set);
      }
      copy.add(s);
    }
    return Collections.unmodifiableSortedSet(copy);
  }

  public static String requireNonBlank(String value, String field) {
    Objects.requireNonNull(value, field);
    if (value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank, got '" + value + "'");
    }
    return value;
  }

  public static java.nio.file.Path requireAbsolute(java.nio.file.Path path, String field) {
    Objects.requireNonNull(path, field);
    if (!path.isAbsolute()) {
      throw new IllegalArgumentException(field + " must be an absolute path, got " + path);
    }
    return path;
  }
}
