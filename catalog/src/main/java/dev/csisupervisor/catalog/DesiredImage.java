package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one node's plugin keys in etcd should be: etcd key -> value of every local registration, and the keys
 * changed since they were last written (the backlog), coalesced and bounded. A backlog that would grow past
 * its bound is dropped: the owner must then reconcile, comparing the whole image with etcd.
 *
 * <p>Not thread-safe: guarded by the monitor of the {@link EtcdCatalogPublisher} that owns it, which holds it
 * for every call. That publisher's events thread fills it ({@link #replaceType}, {@link #apply}); its io thread
 * drains it ({@link #takeAll}, {@link #takeBatch}, {@link #putBack}); status and awaitInSync read it from any
 * thread.
 */
final class DesiredImage {
  /** A key to write: its value, or null for a delete, and when it changed. */
  record Change(String key, ByteString value, Instant since) {}

  private final CatalogKeys keys;
  private final String nodeId;
  private final int maxBacklog;
  /** etcd key -> value of every local registration. */
  private final Map<String, ByteString> desired = new HashMap<>();
  /** Keys changed since last written, coalesced (newest value is in desired; absent = delete), with the change time. */
  private final LinkedHashMap<String, Instant> dirty = new LinkedHashMap<>();
  private long overflows;

  DesiredImage(CatalogKeys keys, String nodeId, int maxBacklog) {
    this.keys = keys;
    this.nodeId = nodeId;
    this.maxBacklog = maxBacklog;
  }

  /** Replaces {@code type}'s part of the image with {@code snapshot}: after a lag the old one may be stale. */
  void replaceType(PluginType type, List<PluginInfo> snapshot) {
    String typeRoot = keys.pluginsRoot() + type.id() + "/";
    desired.keySet().removeIf(k -> k.startsWith(typeRoot));
    for (PluginInfo p : snapshot) {
      desired.put(keys.pluginKey(nodeId, p.key()), CatalogCodec.encode(CatalogEntry.of(nodeId, p)));
    }
  }

  /**
   * Applies one registry event to the image and the backlog.
   *
   * @return false if the backlog was full and dropped: a reconcile must compare the whole image instead
   */
  boolean apply(PluginEvent e) {
    String key = keys.pluginKey(nodeId, e.plugin().key());
    if (e.kind() == PluginEvent.Kind.DEREGISTERED) {
      desired.remove(key);
    } else {
      desired.put(key, CatalogCodec.encode(CatalogEntry.of(nodeId, e.plugin())));
    }
    if (!dirty.containsKey(key) && dirty.size() >= maxBacklog) {
      // Bounded: drop the per-key backlog; a reconcile compares the whole image instead.
      dirty.clear();
      overflows++;
      return false;
    }
    dirty.putIfAbsent(key, e.time());
    return true;
  }

  /** A copy of the whole image, for a reconcile; the backlog is covered by it and cleared. */
  Map<String, ByteString> takeAll() {
    Map<String, ByteString> want = new HashMap<>(desired);
    dirty.clear(); // covered by this reconcile; changes from now on are dirty again
    return want;
  }

  /** Takes up to {@code max} of the oldest changes off the backlog, with their current values. */
  List<Change> takeBatch(int max) {
    List<Change> batch = new ArrayList<>();
    Iterator<Map.Entry<String, Instant>> it = dirty.entrySet().iterator();
    while (it.hasNext() && batch.size() < max) {
      Map.Entry<String, Instant> e = it.next();
      it.remove();
      batch.add(new Change(e.getKey(), desired.get(e.getKey()), e.getValue()));
    }
    return batch;
  }

  /** Puts back a batch whose write failed (a newer change of the same key keeps its own, later, time: no harm either way). */
  void putBack(List<Change> batch) {
    batch.forEach(c -> dirty.putIfAbsent(c.key(), c.since()));
  }

  boolean backlogEmpty() {
    return dirty.isEmpty();
  }

  int backlog() {
    return dirty.size();
  }

  /** How long the oldest change in the backlog has waited; zero when there is none. */
  Duration oldestWait(Instant now) {
    if (dirty.isEmpty()) {
      return Duration.ZERO;
    }
    Instant first = dirty.values().stream().min(Instant::compareTo).orElse(now);
    return Duration.between(first, now).isNegative() ? Duration.ZERO : Duration.between(first, now);
  }

  /** How many times the backlog overflowed and was dropped. */
  long overflows() {
    return overflows;
  }
}
