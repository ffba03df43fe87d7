package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.DeleteRangeRequest;
import dev.csisupervisor.catalog.etcdpb.PutRequest;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RangeResponse;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd publisher. Two threads: {@code events} takes registry events into {@link #desired} and
 * {@link #dirty} (never blocks); {@code io} does every etcd call as one state machine step
 * ({@link #runOnce()}): connect (lease, node key, reconcile, keep-alive), then flush the backlog in
 * transactions. Any etcd failure drops back to "connect" after a backoff delay.
 */
final class EtcdCatalogPublisher implements CatalogPublisher {
  private static final Logger log = LoggerFactory.getLogger(EtcdCatalogPublisher.class);

  private enum State { NEW, RUNNING, CLOSED }

  private final PluginRegistry registry;
  private final EtcdClient client;
  private final CatalogKeys keys;
  private final String nodeId;
  private final String hostname;
  private final long ttlSeconds;
  private final int maxBacklog;
  private final int batchSize;
  private final Clock clock;
  private final boolean revokeOnClose;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final ExecutorService events;
  private final ScheduledExecutorService io;
  private final Instant startedAt;

  // ---- guarded by this -----------------------------------------------------------------------
  /** etcd key -> value of every local registration. */
  private final Map<String, ByteString> desired = new HashMap<>();
  /** Keys changed since last written, coalesced (newest value is in desired; absent = delete), with the change time. */
  private final LinkedHashMap<String, Instant> dirty = new LinkedHashMap<>();
  private final Map<PluginType, Subscription> subscriptions = new EnumMap<>(PluginType.class);
  private boolean needReconcile;
  private boolean runScheduled;
  private long published;
  private long etcdErrors;
  private long reconciles;
  private long overflows;
  private Duration lastPublishLag = Duration.ZERO;
  private String lastError = "";

  // ---- io thread only (volatile for status()) ------------------------------------------------
  private volatile boolean connected;
  private volatile long leaseId;
  /** The current connection's keep-alive; null while disconnected. */
  private volatile LeaseKeepAlive keepAlive;
  /** The last keep-alive answer: when (nanoTime) and the TTL it granted; for {@link #status()}. */
  private volatile long keepAliveAnsweredNanos;
  private volatile long keepAliveAnsweredTtl;
  /** One timer thread for the keep-alive pings of every publisher in the JVM. */
  private static final ScheduledExecutorService KEEPALIVE = Executors.newSingleThreadScheduledExecutor(daemon("catalog-keepalive"));
  private final Backoff backoff;
  private int failuresInRow;
  /** What this publisher last wrote on its current lease, by key: lets a reconcile skip unchanged keys. */
  private final Map<String, ByteString> lastWritten = new HashMap<>();
  /** The lease of a previous run with the same node id, until a reconcile has taken over its keys. */
  private long previousLease;
  /** The node key's mod revision as this connection put it; every write is conditional on it ({@link #write}). */
  private long nodeKeyRevision;

  EtcdCatalogPublisher(CatalogPublisher.Builder b) {
    this.registry = b.registry;
    this.client = b.newClient();
    this.keys = b.keys;
    this.nodeId = b.nodeId;
    this.hostname = b.hostname;
    this.ttlSeconds = b.leaseTtl.toSeconds();
    this.maxBacklog = b.maxBacklog;
    this.batchSize = b.batchSize;
    this.backoff = b.newBackoff();
    this.clock = b.clock;
    this.revokeOnClose = b.revokeOnClose;
    this.startedAt = clock.instant();
    this.events = Executors.newSingleThreadExecutor(daemon("catalog-events-" + nodeId));
    this.io = Executors.newSingleThreadScheduledExecutor(daemon("catalog-io-" + nodeId));
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }

  @Override
  public String nodeId() {
    return nodeId;
  }

  @Override
  public void start() {
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException("publisher for node " + nodeId + " is " + state.get().name().toLowerCase() + ", cannot start");
    }
    log.info("catalog: publishing node {} to etcd {} under {} (lease ttl {}s)", nodeId, client.options().endpoints(), keys, ttlSeconds);
    for (PluginType t : PluginType.values()) {
      events.execute(() -> subscribe(t));
    }
  }

  // ---- registry side (events thread) ---------------------------------------------------------

  /** Runs on the events thread, so this type's events (queued on the same thread) come after the snapshot. */
  private void subscribe(PluginType type) {
    if (state.get() != State.RUNNING) {
      return;
    }
    Subscription sub;
    try {
      sub = registry.subscribe(type, new Listener(type), events);
    } catch (IllegalStateException e) {
      // The registry closed (the agent is stopping): nothing more will change; close() revokes the lease.
      log.info("catalog: no more {} registrations to publish: {}", type.id(), e.getMessage());
      return;
    }
    synchronized (this) {
      subscriptions.put(type, sub);
      // Replace this type's part of the desired image: after a lag the old one may be stale.
      String typeRoot = keys.pluginsRoot() + type.id() + "/";
      desired.keySet().removeIf(k -> k.startsWith(typeRoot));
      for (PluginInfo p : sub.snapshot()) {
        desired.put(keys.pluginKey(nodeId, p.key()), CatalogCodec.encode(CatalogEntry.of(nodeId, p)));
      }
      needReconcile = true;
    }
    kick();
  }

  private final class Listener implements PluginListener {
    private final PluginType type;

    Listener(PluginType type) {
      this.type = type;
    }

    @Override
    public void onEvent(PluginEvent e) {
      String key = keys.pluginKey(nodeId, e.plugin().key());
      synchronized (EtcdCatalogPublisher.this) {
        if (e.kind() == PluginEvent.Kind.DEREGISTERED) {
          desired.remove(key);
        } else {
          desired.put(key, CatalogCodec.encode(CatalogEntry.of(nodeId, e.plugin())));
        }
        if (!dirty.containsKey(key) && dirty.size() >= maxBacklog) {
          // Bounded: drop the per-key backlog; a reconcile compares the whole image instead.
          dirty.clear();
          overflows++;
          needReconcile = true;
        } else {
          dirty.putIfAbsent(key, e.time());
        }
      }
      kick();
    }

    @Override
    public void onLagged(long lastDeliveredSequence) {
      log.warn("catalog: {} subscription lagged after sequence {}; resubscribing", type.id(), lastDeliveredSequence);
    }

    @Override
    public void onClosed() {
      if (state.get() == State.RUNNING && !events.isShutdown()) {
        // Lagged (or the registry closed: then subscribe fails and says so).
        events.execute(() -> subscribe(type));
      }
    }
  }

  // ---- etcd side (io thread) -----------------------------------------------------------------

  private void kick() {
    synchronized (this) {
      if (runScheduled || state.get() != State.RUNNING) {
        return;
      }
      runScheduled = true;
    }
    try {
      io.execute(this::runOnce);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closing
    }
  }

  /** One step: connect if needed, reconcile if asked, flush the backlog. On failure, retry after backoff. */
  private void runOnce() {
    synchronized (this) {
      runScheduled = false;
    }
    if (state.get() != State.RUNNING) {
      return;
    }
    try {
      if (!connected) {
        connect();
      }
      boolean reconcile;
      synchronized (this) {
        reconcile = needReconcile;
      }
      if (reconcile) {
        reconcile();
      }
      while (flushBatch()) {
        if (state.get() != State.RUNNING) {
          return;
        }
      }
      if (failuresInRow > 0) {
        log.info("catalog: etcd {} reachable again after {} failed attempt(s); node {} in sync", client.endpoint(), failuresInRow, nodeId);
      }
      failuresInRow = 0;
      backoff.reset();
      synchronized (this) {
        notifyAll(); // awaitInSync
      }
    } catch (EtcdException e) {
      fail(e);
    } catch (RuntimeException e) {
      log.error("catalog: unexpected publisher failure", e);
      fail(new EtcdException(e.toString(), "INTERNAL", e));
    }
  }

  private void fail(EtcdException e) {
    if ("LEASE_EXPIRED".equals(e.code())) {
      leaseId = 0; // a new one on reconnect, and every key put again
    }
    synchronized (this) {
      etcdErrors++;
      lastError = e.getMessage();
      needReconcile = true;
    }
    disconnect();
    failuresInRow++;
    Duration delay = backoff.next();
    // One line per backoff step, never one per key.
    log.warn("catalog: etcd unavailable (attempt {}): {}; retrying in {} ms", failuresInRow, e.getMessage(), delay.toMillis());
    client.failover();
    synchronized (this) {
      runScheduled = true;
    }
    try {
      io.schedule(this::runOnce, delay.toMillis(), TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException ignored) {
      // closing
    }
  }

  private void disconnect() {
    connected = false;
    LeaseKeepAlive ka = keepAlive;
    keepAlive = null;
    if (ka != null) {
      ka.stop();
    }
  }

  /** Step 1: a live lease (the old one if it survived the outage). Step 2: the node key. Step 3: reconcile. */
  private void connect() {
    if (leaseId != 0 && client.leaseTimeToLive(leaseId) <= 0) {
      log.info("catalog: lease {} of node {} expired; granting a new one", Long.toHexString(leaseId), nodeId);
      leaseId = 0;
    }
    if (leaseId == 0) {
      leaseId = client.grantLease(ttlSeconds);
      keepAliveAnsweredNanos = 0;
      lastWritten.clear();
    }
    // A previous run with this node id (crashed, or restarted within its TTL): its keys are on its lease.
    RangeResponse prev = client.range(RangeRequest.newBuilder().setKey(EtcdClient.bytes(keys.nodeKey(nodeId))).build());
    if (prev.getKvsCount() > 0 && prev.getKvs(0).getLease() != 0 && prev.getKvs(0).getLease() != leaseId) {
      previousLease = prev.getKvs(0).getLease();
    }
    NodeEntry node = new NodeEntry(nodeId, hostname, startedAt, ttlSeconds);
    nodeKeyRevision = client.txn(TxnRequest.newBuilder().addSuccess(put(keys.nodeKey(nodeId), CatalogCodec.encode(node))).build())
        .getHeader().getRevision();
    long lease = leaseId;
    keepAlive = LeaseKeepAlive.start(client, lease, ttlSeconds, KEEPALIVE, ttl -> {
      if (lease == leaseId) {
        keepAliveAnsweredTtl = ttl;
        keepAliveAnsweredNanos = System.nanoTime();
      }
    }, (ka, e) -> post(() -> leaseLost(ka, e)));
    synchronized (this) {
      needReconcile = true;
    }
    connected = true;
  }

  private void post(Runnable r) {
    try {
      io.execute(r);
    } catch (java.util.concurrent.RejectedExecutionException ignored) {
      // closed
    }
  }

  /** On the io thread: the keep-alive {@code ka} failed; ignored if it is an old one, or already handled. */
  private void leaseLost(LeaseKeepAlive ka, EtcdException e) {
    if (state.get() != State.RUNNING || ka != keepAlive || !connected) {
      return;
    }
    fail(e);
  }

  /**
   * Makes etcd's keys of this node exactly {@link #desired}. The node's keys are the ones on its lease (and on
   * the lease of a previous run with the same node id, found on the node key): listing them costs the same
   * however large the cluster is. What is missing or stale is put, what the registry no longer has is deleted.
   */
  private void reconcile() {
    Map<String, ByteString> want;
    synchronized (this) {
      needReconcile = false;
      want = new HashMap<>(desired);
      dirty.clear(); // covered by this reconcile; changes from now on are dirty again
      reconciles++;
    }
    List<ByteString> current = client.leaseKeys(leaseId);
    if (current == null) {
      throw new EtcdException("lease " + Long.toHexString(leaseId) + " expired", "LEASE_EXPIRED", null);
    }
    java.util.Set<String> onLease = ours(current);
    java.util.Set<String> existing = new java.util.HashSet<>(onLease);
    if (previousLease != 0) {
      List<ByteString> old = client.leaseKeys(previousLease);
      if (old != null) {
        existing.addAll(ours(old));
      }
    }
    List<RequestOp> ops = new ArrayList<>();
    Map<String, ByteString> written = new HashMap<>();
    int deletes = 0;
    int unchanged = 0;
    for (String key : existing) {
      if (!want.containsKey(key)) {
        ops.add(delete(key));
        written.put(key, null);
        deletes++;
      }
    }
    for (Map.Entry<String, ByteString> e : want.entrySet()) {
      if (onLease.contains(e.getKey()) && e.getValue().equals(lastWritten.get(e.getKey()))) {
        unchanged++;
      } else {
        ops.add(put(e.getKey(), e.getValue()));
        written.put(e.getKey(), e.getValue());
      }
    }
    for (int i = 0; i < ops.size(); i += batchSize) {
      write(ops.subList(i, Math.min(ops.size(), i + batchSize)));
    }
    written.forEach((k, v) -> {
      if (v == null) {
        lastWritten.remove(k);
      } else {
        lastWritten.put(k, v);
      }
    });
    previousLease = 0;
    synchronized (this) {
      published += ops.size();
    }
    log.info("catalog: node {} reconciled with etcd: {} put, {} deleted, {} unchanged", nodeId, ops.size() - deletes,
        deletes, unchanged);
  }

  /** The keys that are this node's plugin keys. */
  private java.util.Set<String> ours(List<ByteString> keyList) {
    java.util.Set<String> out = new java.util.HashSet<>();
    for (ByteString k : keyList) {
      String key = k.toStringUtf8();
      var path = keys.parsePluginKey(key);
      if (path.isPresent() && path.get().nodeId().equals(nodeId)) {
        out.add(key);
      }
    }
    return out;
  }

  /**
   * Writes {@code ops} in one transaction, only if the node key is still as this connection put it. A write
   * whose answer was lost (a stopped member, a dead leader) may yet be applied later, after newer ones; every
   * connection puts the node key again, so such a late write of an earlier connection changes nothing. Its keys
   * are forgotten from {@link #lastWritten}: the reconcile after the failure writes them again, whatever landed.
   * Failing the check ourselves means the node key was written behind our back (a late write of an earlier
   * connection, or another process with this node id): what etcd holds can no longer be trusted, so the
   * publisher reconnects and rewrites every key.
   */
  private void write(List<RequestOp> ops) {
    TxnRequest txn = TxnRequest.newBuilder()
        .addCompare(Compare.newBuilder().setKey(EtcdClient.bytes(keys.nodeKey(nodeId))).setTarget(Compare.CompareTarget.MOD)
            .setResult(Compare.CompareResult.EQUAL).setModRevision(nodeKeyRevision))
        .addAllSuccess(ops).build();
    TxnResponse r;
    try {
      r = client.txn(txn);
    } catch (EtcdException e) {
      for (RequestOp op : ops) {
        lastWritten.remove((op.hasRequestPut() ? op.getRequestPut().getKey() : op.getRequestDeleteRange().getKey()).toStringUtf8());
      }
      throw e;
    }
    if (!r.getSucceeded()) {
      lastWritten.clear();
      throw new EtcdException("etcd " + client.endpoint() + ": node key " + keys.nodeKey(nodeId) + " changed behind the"
          + " publisher's back (a late write of an earlier connection, or another agent with node id " + nodeId
          + "); writing every key again", "NODE_KEY_CHANGED", null);
    }
  }

  /** Writes up to {@link #batchSize} dirty keys in one transaction; false when nothing was left. */
  private boolean flushBatch() {
    Map<String, Instant> batch = new LinkedHashMap<>();
    List<RequestOp> ops = new ArrayList<>();
    synchronized (this) {
      if (dirty.isEmpty() || needReconcile) {
        return false;
      }
      Iterator<Map.Entry<String, Instant>> it = dirty.entrySet().iterator();
      while (it.hasNext() && batch.size() < batchSize) {
        Map.Entry<String, Instant> e = it.next();
        it.remove();
        batch.put(e.getKey(), e.getValue());
        ByteString v = desired.get(e.getKey());
        ops.add(v == null ? delete(e.getKey()) : put(e.getKey(), v));
      }
    }
    try {
      write(ops);
    } catch (EtcdException e) {
      synchronized (this) {
        // Put them back (a newer change of the same key keeps its own, later, time: no harm either way).
        batch.forEach(dirty::putIfAbsent);
      }
      throw e;
    }
    for (RequestOp op : ops) {
      if (op.hasRequestPut()) {
        lastWritten.put(op.getRequestPut().getKey().toStringUtf8(), op.getRequestPut().getValue());
      } else {
        lastWritten.remove(op.getRequestDeleteRange().getKey().toStringUtf8());
      }
    }
    Instant now = clock.instant();
    Instant oldest = batch.values().stream().min(Instant::compareTo).orElse(now);
    synchronized (this) {
      published += batch.size();
      lastPublishLag = Duration.between(oldest, now).isNegative() ? Duration.ZERO : Duration.between(oldest, now);
    }
    return true;
  }

  private RequestOp put(String key, ByteString value) {
    return RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder()
        .setKey(EtcdClient.bytes(key)).setValue(value).setLease(leaseId)).build();
  }

  private static RequestOp delete(String key) {
    return RequestOp.newBuilder().setRequestDeleteRange(DeleteRangeRequest.newBuilder().setKey(EtcdClient.bytes(key))).build();
  }

  @Override
  public synchronized boolean awaitInSync(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!(connected && dirty.isEmpty() && !needReconcile && reconciles > 0)) {
      long left = deadline - System.nanoTime();
      if (left <= 0 || state.get() == State.CLOSED) {
        return false;
      }
      TimeUnit.NANOSECONDS.timedWait(this, left);
    }
    return true;
  }

  // ---- status and close ----------------------------------------------------------------------

  @Override
  public synchronized PublisherStatus status() {
    Instant now = clock.instant();
    Duration oldest = Duration.ZERO;
    if (!dirty.isEmpty()) {
      Instant first = dirty.values().stream().min(Instant::compareTo).orElse(now);
      oldest = Duration.between(first, now).isNegative() ? Duration.ZERO : Duration.between(first, now);
    }
    return new PublisherStatus(connected, client.endpoint().toString(), leaseId, leaseTtlLeft(), dirty.size(), oldest,
        lastPublishLag, published, etcdErrors, reconciles, overflows, lastError);
  }

  /** The lease's TTL at its last keep-alive answer, less the time since; zero without a lease or an answer. */
  private Duration leaseTtlLeft() {
    long answered = keepAliveAnsweredNanos;
    if (leaseId == 0 || answered == 0) {
      return Duration.ZERO;
    }
    Duration left = Duration.ofSeconds(keepAliveAnsweredTtl).minusNanos(System.nanoTime() - answered);
    return left.isNegative() ? Duration.ZERO : left;
  }

  @Override
  public void close() {
    State previous = state.getAndSet(State.CLOSED);
    if (previous == State.CLOSED) {
      return;
    }
    List<Subscription> subs;
    synchronized (this) {
      subs = new ArrayList<>(subscriptions.values());
      subscriptions.clear();
    }
    subs.forEach(Subscription::close);
    events.shutdown();
    // On the io thread, after any step in progress: stop the keep-alive, then revoke.
    var done = io.submit(() -> {
      disconnect();
      if (revokeOnClose && leaseId != 0 && previous == State.RUNNING) {
        try {
          client.revokeLease(leaseId);
          log.info("catalog: node {} left the catalog (lease {} revoked)", nodeId, Long.toHexString(leaseId));
        } catch (EtcdException e) {
          log.warn("catalog: could not revoke lease of node {} (its keys expire with the lease): {}", nodeId, e.getMessage());
        }
      }
    });
    try {
      done.get(client.options().requestTimeout().toMillis() * 2 + 1000, TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      log.warn("catalog: close of node {} did not finish cleanly: {}", nodeId, e.toString());
    }
    io.shutdownNow();
    client.close();
  }
}
