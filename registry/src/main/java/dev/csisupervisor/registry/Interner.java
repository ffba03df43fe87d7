package dev.csisupervisor.registry;

import java.util.HashMap;
import java.util.Map;

/**
 * Shares equal values among the registrations of one restore: most registrations of a node repeat a handful of
 * plugin names, versions and fingerprints, and a fingerprint (capability sets, topology) is the largest part of
 * a registration in memory. Not thread-safe: one per restore.
 */
final class Interner {
  private final Map<String, String> strings = new HashMap<>();
  private final Map<Fingerprint, Fingerprint> fingerprints = new HashMap<>();

  String string(String s) {
    String shared = strings.putIfAbsent(s, s);
    return shared == null ? s : shared;
  }

  Fingerprint fingerprint(Fingerprint f) {
    Fingerprint shared = fingerprints.putIfAbsent(f, f);
    return shared == null ? f : shared;
  }
}
