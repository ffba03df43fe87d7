package dev.csisupervisor.catalog;

import dev.csisupervisor.catalog.etcdpb.Event;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;

/**
 * What the {@link EtcdClusterView} holds and tells: plugins and nodes by etcd key at one revision, the numbered
 * events of their changes, and the subscribers those events go to.
 *
 * <p>Memory and the event sequence are guarded by {@code this}: a list or a watch answer is applied and its
 * events numbered under the lock; {@link #deliver} hands them to the subscribers after it, in sequence order.
 * Only the view's io thread applies changes and delivers; any thread may read or subscribe. A subscriber joins
 * with a snapshot and the sequence number it reflects, atomically.
 */
final class ViewContents {
  private final int maxSubscriberBacklog;
  private final List<ViewSubscriber> subscribers = new CopyOnWriteArrayList<>();

  // guarded by this
  private final Map<String, CatalogEntry> plugins = new HashMap<>();
  private final Map<String, NodeEntry> nodes = new HashMap<>();
  private final List<ClusterEvent> outbox = new ArrayList<>();
  private long revision;
  private long sequence;
  private ClusterSnapshot cached;

  ViewContents(int maxSubscriberBacklog) {
    this.maxSubscriberBacklog = maxSubscriberBacklog;
  }

  synchronized ClusterSnapshot snapshot() {
    if (cached == null) {
      cached = ClusterSnapshot.of(revision, nodes.values(), plugins.values());
    }
    return cached;
  }

  /** The revision the view reflects. */
  synchronized long revision() {
    return revision;
  }

  /** A subscriber from the current snapshot on; it gets every event numbered after it. */
  synchronized ClusterSubscription subscribe(ClusterListener listener, Executor executor) {
    ViewSubscriber[] self = new ViewSubscriber[1];
    self[0] = new ViewSubscriber(listener, executor, snapshot(), sequence, maxSubscriberBacklog,
        () -> subscribers.remove(self[0]));
    subscribers.add(self[0]);
    return self[0];
  }

  /** A full list at {@code rev}: what it lacks is removed, the rest put (an event for each difference). */
  synchronized void replaceAll(long rev, Map<String, CatalogEntry> listedPlugins, Map<String, NodeEntry> listedNodes) {
    for (var e : new ArrayList<>(plugins.entrySet())) {
      if (!listedPlugins.containsKey(e.getKey())) {
        plugins.remove(e.getKey());
        emit(rev, ClusterEvent.Kind.PLUGIN_REMOVED, e.getValue(), null);
      }
    }
    for (var e : new ArrayList<>(nodes.entrySet())) {
      if (!listedNodes.containsKey(e.getKey())) {
        nodes.remove(e.getKey());
        emit(rev, ClusterEvent.Kind.NODE_REMOVED, null, e.getValue());
      }
    }
    listedNodes.forEach((k, v) -> putNode(rev, k, v));
    listedPlugins.forEach((k, v) -> putPlugin(rev, k, v));
    revision = rev;
    cached = null;
  }

  /** One answer of the watch on the catalog's prefix: its events, or (with none) the revision it confirms. */
  synchronized void apply(CatalogKeys keys, WatchResponse r) {
    for (Event ev : r.getEventsList()) {
      long rev = ev.getKv().getModRevision();
      if (ev.getType() == Event.EventType.DELETE) {
        remove(rev, ev.getKv().getKey().toStringUtf8());
      } else {
        put(keys, rev, ev.getKv());
      }
      revision = Math.max(revision, rev);
    }
    if (r.getEventsCount() == 0 && r.getHeader().getRevision() > revision && !r.getCreated()) {
      revision = r.getHeader().getRevision(); // progress notification
    }
    cached = null;
  }

  private void remove(long rev, String key) {
    CatalogEntry p = plugins.remove(key);
    if (p != null) {
      emit(rev, ClusterEvent.Kind.PLUGIN_REMOVED, p, null);
    }
    NodeEntry n = nodes.remove(key);
    if (n != null) {
      emit(rev, ClusterEvent.Kind.NODE_REMOVED, null, n);
    }
  }

  /** A key that does not decode as a plugin or node is skipped: volumes, claims, attachments and controllers are not the view's. */
  private void put(CatalogKeys keys, long rev, KeyValue kv) {
    Map<String, CatalogEntry> p = new HashMap<>(1);
    Map<String, NodeEntry> n = new HashMap<>(1);
    if (CatalogListing.decode(keys, kv, p, n)) {
      p.forEach((k, v) -> putPlugin(rev, k, v));
      n.forEach((k, v) -> putNode(rev, k, v));
    }
  }

  private void putPlugin(long rev, String key, CatalogEntry e) {
    ClusterEvent.Kind kind = change(plugins.put(key, e), e, ClusterEvent.Kind.PLUGIN_ADDED,
        ClusterEvent.Kind.PLUGIN_UPDATED);
    if (kind != null) {
      emit(rev, kind, e, null);
    }
  }

  private void putNode(long rev, String key, NodeEntry e) {
    ClusterEvent.Kind kind = change(nodes.put(key, e), e, ClusterEvent.Kind.NODE_ADDED, ClusterEvent.Kind.NODE_UPDATED);
    if (kind != null) {
      emit(rev, kind, null, e);
    }
  }

  /** What putting {@code now} where {@code old} was (null: nothing) is: added, updated, or null if it is the same. */
  private static ClusterEvent.Kind change(Object old, Object now, ClusterEvent.Kind added, ClusterEvent.Kind updated) {
    if (old == null) {
      return added;
    }
    return old.equals(now) ? null : updated;
  }

  /** Under the lock: number the change; {@link #deliver()} hands it out after the lock is released. */
  private void emit(long rev, ClusterEvent.Kind kind, CatalogEntry p, NodeEntry n) {
    outbox.add(new ClusterEvent(++sequence, rev, kind, p, n));
    cached = null;
  }

  /**
   * On the io thread (the only one that emits), outside the lock, in sequence order. A subscriber that
   * joined after an event was numbered drops it: its snapshot already has it.
   */
  void deliver() {
    List<ClusterEvent> out;
    synchronized (this) {
      if (outbox.isEmpty()) {
        return;
      }
      out = new ArrayList<>(outbox);
      outbox.clear();
    }
    for (ClusterEvent e : out) {
      for (ViewSubscriber s : subscribers) {
        s.offer(e);
      }
    }
  }

  /** Ends every subscription (the view is closed). */
  void closeSubscribers() {
    for (ViewSubscriber s : subscribers) {
      s.close();
    }
  }
}
