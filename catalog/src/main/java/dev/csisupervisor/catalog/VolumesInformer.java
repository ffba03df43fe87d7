package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Event;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import dev.csisupervisor.catalog.etcdpb.WatchCreateRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The cluster-volume keys mirrored from etcd, in the shape of Kubernetes' informers: one list of every key the
 * controller agent acts on (volumes, claims, attachments, elections, node keys, requests, clean-stop markers,
 * remembered capabilities) at one revision, then one watch of the catalog prefix from the next revision, each event
 * applied before the change hint is given. A controller round reads the mirror ({@link #snapshot}), not etcd: with
 * nothing changing, the controller agent makes no etcd request beyond its keep-alives, and a change is acted on as
 * soon as its event arrives.
 *
 * <p>The mirror is exact up to {@link #revision()} (the list's revision, then each applied event's): every write
 * the controller agent makes is conditional on revisions it read here, so a mirror behind etcd makes a write fail,
 * never a wrong one. When the watch fails, ends, or etcd compacted past it, the mirror is not used
 * ({@link #snapshot} empty: the caller reads etcd) until a new list and watch are in place ({@link SingleWatch}
 * opens it again, a second later, on the next endpoint); it is listed afresh every {@code resync} as well.
 * Thread-safe.
 */
final class VolumesInformer implements SingleWatch.Handler, AutoCloseable {
  /** Makes a snapshot of the keys under each root at a revision, decoding only what the memo has not seen. */
  interface Decoder {
    VolumesSnapshot decode(long revision, Map<String, List<KeyValue>> byRoot, DecodeMemo memo);
  }

  private final EtcdClient client;
  private final CatalogKeys keys;
  private final List<String> roots;
  private final Decoder decode;
  private final DecodeMemo memo = new DecodeMemo(); // guarded by this
  private final Runnable changed;
  private final Duration resync;
  private final SingleWatch watch;

  private final NavigableMap<String, KeyValue> kvs = new TreeMap<>(); // guarded by this
  private long revision; // guarded by this
  /** The last list's revision: events at or before it are in the list already. */
  private long listRevision; // guarded by this
  private boolean synced; // guarded by this
  private long listedAt; // nanoTime of the last list; guarded by this
  private VolumesSnapshot decoded; // guarded by this: null when the mirror changed since
  private boolean closed; // guarded by this
  private long lists; // guarded by this

  /**
   * @param decode makes a snapshot of the keys under each root at a revision (the same decoding a direct read uses)
   */
  VolumesInformer(EtcdClient client, CatalogKeys keys, List<String> roots,
      Decoder decode, Runnable changed, Duration resync) {
    this.client = client;
    this.keys = keys;
    this.roots = List.copyOf(roots);
    this.decode = decode;
    this.changed = changed;
    this.resync = resync;
    this.watch = new SingleWatch(client, keys.root(), this);
  }

  /** Lists and starts watching (a failure is retried a second later). */
  VolumesInformer open() {
    watch.open();
    return this;
  }

  /** Each open: a list of every root, then one watch of the catalog prefix from the revision after it. */
  @Override
  public List<WatchCreateRequest> creates() {
    return List.of(SingleWatch.prefix(keys.root(), list() + 1));
  }

  /** One list of every root at one revision into the mirror; returns that revision. */
  private long list() {
    TxnRequest.Builder t = TxnRequest.newBuilder();
    for (String root : roots) {
      ByteString k = EtcdClient.bytes(root);
      t.addSuccess(RequestOp.newBuilder().setRequestRange(RangeRequest.newBuilder().setKey(k)
          .setRangeEnd(EtcdClient.prefixEnd(k))));
    }
    TxnResponse r = client.txn(t.build());
    synchronized (this) {
      kvs.clear();
      for (int i = 0; i < roots.size(); i++) {
        for (KeyValue kv : r.getResponses(i).getResponseRange().getKvsList()) {
          kvs.put(kv.getKey().toStringUtf8(), kv);
        }
      }
      memo.retain(kvs.keySet());
      revision = r.getHeader().getRevision();
      listRevision = revision;
      decoded = null;
      synced = true;
      listedAt = System.nanoTime();
      lists++;
      return revision;
    }
  }

  @Override
  public String onResponse(WatchResponse r) {
    if (r.getCompactRevision() > 0) {
      return "etcd compacted past the watch (revision " + r.getCompactRevision() + ")";
    }
    if (r.getCanceled()) {
      return "the watch was cancelled by etcd: " + r.getCancelReason();
    }
    boolean hint = false;
    synchronized (this) {
      for (Event e : r.getEventsList()) {
        String key = e.getKv().getKey().toStringUtf8();
        if (!ours(key) || e.getKv().getModRevision() <= listRevision) {
          continue; // not a key of ours, or a change the last list has already
        }
        if (e.getType() == Event.EventType.DELETE) {
          kvs.remove(key);
          memo.forget(key);
        } else {
          kvs.put(key, e.getKv());
        }
        revision = Math.max(revision, e.getKv().getModRevision());
        decoded = null;
        hint = true;
      }
    }
    if (hint) {
      hint();
    }
    return null;
  }

  @Override
  public synchronized void onDown() {
    synced = false;
  }

  @Override
  public void onReopened() {
    hint(); // whatever changed while it was down
  }

  private void hint() {
    try {
      changed.run();
    } catch (RuntimeException e) {
      org.slf4j.LoggerFactory.getLogger(VolumesInformer.class).warn("a change hint's receiver threw", e);
    }
  }

  private boolean ours(String key) {
    for (String root : roots) {
      if (key.startsWith(root)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The mirror as a snapshot, decoded once per change; empty while it is not in sync with etcd (the caller reads
   * etcd). Due for its periodic list, it lists now, on the caller's thread (the watch goes on: its later events
   * apply on top).
   */
  Optional<VolumesSnapshot> snapshot() {
    synchronized (this) {
      if (!synced || closed) {
        return Optional.empty();
      }
      if (System.nanoTime() - listedAt < resync.toNanos()) {
        return Optional.of(decodedLocked());
      }
    }
    try {
      list();
    } catch (EtcdException e) {
      return Optional.empty();
    }
    synchronized (this) {
      return synced && !closed ? Optional.of(decodedLocked()) : Optional.empty();
    }
  }

  private VolumesSnapshot decodedLocked() {
    if (decoded == null) {
      Map<String, List<KeyValue>> byRoot = new HashMap<>();
      for (String root : roots) {
        byRoot.put(root, new ArrayList<>(kvs.subMap(root, true, root + Character.MAX_VALUE, true).values()));
      }
      decoded = decode.decode(revision, byRoot, memo);
    }
    return decoded;
  }

  /** The value at {@code key} as mirrored; empty if not in sync or not a key of ours (then the caller reads etcd). */
  synchronized Optional<Optional<KeyValue>> get(String key) {
    if (!synced || closed || !ours(key)) {
      return Optional.empty();
    }
    return Optional.of(Optional.ofNullable(kvs.get(key)));
  }

  /** The revision up to which the mirror is exact. */
  synchronized long revision() {
    return revision;
  }

  /** How many lists it made (the first, reopens, resyncs). */
  synchronized long lists() {
    return lists;
  }

  /** Whether the mirror is in sync (listed, and its watch open since). */
  synchronized boolean synced() {
    return synced && !closed;
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      synced = false;
    }
    watch.close();
  }
}
