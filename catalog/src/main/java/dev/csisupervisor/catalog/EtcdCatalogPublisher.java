package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.common.Backoff;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginListener;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.registry.Subscription;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
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
 * The etcd publisher. Two threads: {@code events} takes registry events into the {@link DesiredImage}
 * (never blocks); {@code io} does every etcd call, through the {@link CatalogWriter}, as one state machine
 * step ({@link #runOnce()}): connect (lease, node key, reconcile, keep-alive), then flush the backlog in
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
  private final String instance;
  private final long ttlSeconds;
  private final int batchSize;
  private final Clock clock;
  private final boolean revokeOnClose;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final ExecutorService events;
  private final ScheduledExecutorService io;
  private final Instant startedAt;

  // ---- guarded by this -----------------------------------------------------------------------
  /** Every local registration as etcd keys, and the backlog of keys not yet written. */
  private final DesiredImage image;
  private final Map<PluginType, Subscription> subscriptions = new EnumMap<>(PluginType.class);
  private boolean needReconcile;
  private boolean runScheduled;
  private long published;
  private long etcdErrors;
  private long reconciles;
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
  /**
   * After an etcd failure: the next endpoint soon, a longer wait once every endpoint failed ({@link FailoverBackoff}).
   */
  private final Backoff backoff;
  /** After a refusal of the node id: asked again on the same endpoint. */
  private final Backoff refusedBackoff;
  private int failuresInRow;
  /** The node key, reconciles and batches, conditional on the node key's revision; what was last written. */
  private final CatalogWriter writer;

  EtcdCatalogPublisher(CatalogPublisher.Builder b) {
    this.registry = b.registry;
    this.client = b.newClient();
    this.keys = b.keys;
    this.nodeId = b.nodeId;
    this.hostname = b.hostname;
    this.instance = b.instance;
    this.ttlSeconds = b.leaseTtl.toSeconds();
    this.batchSize = b.batchSize;
    this.image = new DesiredImage(keys, nodeId, b.maxBacklog);
    this.writer = new CatalogWriter(client, keys, nodeId, batchSize);
    this.backoff = b.newFailoverBackoff();
    this.refusedBackoff = b.newBackoff();
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
      image.replaceType(type, sub.snapshot());
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
      synchronized (EtcdCatalogPublisher.this) {
        if (!image.apply(e)) {
          needReconcile = true;
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
      refusedBackoff.reset();
      synchronized (this) {
        notifyAll(); // awaitInSync
      }
    } catch (EtcdException e) {
      fail(e);
    } catch (NodeIdInUseException e) {
      refused(e);
    } catch (RuntimeException e) {
      log.error("catalog: unexpected publisher failure", e);
      fail(new EtcdException(e.toString(), "INTERNAL", e));
    }
  }

  private void fail(EtcdException e) {
    if ("LEASE_EXPIRED".equals(e.code())) {
      leaseId = 0; // a new one on reconnect, and every key put again
    }
    Duration delay = failed(e.getMessage(), backoff);
    // One line per backoff step, never one per key.
    log.warn("catalog: etcd unavailable (attempt {}): {}; retrying in {} ms", failuresInRow, e.getMessage(), delay.toMillis());
    client.failover();
    retryIn(delay);
  }

  /** Another live agent has this node id: nothing is published; asked again after backoff (it may stop). */
  private void refused(NodeIdInUseException e) {
    long lease = leaseId;
    leaseId = 0;
    if (lease != 0) {
      try {
        client.revokeLease(lease); // it holds nothing of ours
      } catch (EtcdException ignored) {
        // expires with its TTL
      }
    }
    Duration delay = failed(e.getMessage(), refusedBackoff);
    log.error("catalog: not publishing: {}; asking again in {} ms", e.getMessage(), delay.toMillis());
    retryIn(delay);
  }

  /** Notes a failed step and disconnects; returns the delay before the next from {@code policy}. */
  private Duration failed(String message, Backoff policy) {
    synchronized (this) {
      etcdErrors++;
      lastError = message;
      needReconcile = true;
    }
    disconnect();
    failuresInRow++;
    return policy.next();
  }

  private void retryIn(Duration delay) {
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
      writer.leaseGranted();
    }
    writer.putNodeKey(leaseId, new NodeEntry(nodeId, hostname, startedAt, ttlSeconds, instance));
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

  /** Makes etcd's keys of this node exactly the desired image (see {@link CatalogWriter#reconcile}). */
  private void reconcile() {
    Map<String, ByteString> want;
    synchronized (this) {
      needReconcile = false;
      want = image.takeAll();
      reconciles++;
    }
    int written = writer.reconcile(leaseId, want);
    synchronized (this) {
      published += written;
    }
  }

  /** Writes up to {@link #batchSize} dirty keys in one transaction; false when nothing was left. */
  private boolean flushBatch() {
    List<DesiredImage.Change> batch;
    synchronized (this) {
      if (image.backlogEmpty() || needReconcile) {
        return false;
      }
      batch = image.takeBatch(batchSize);
    }
    try {
      writer.writeChanges(leaseId, batch);
    } catch (EtcdException e) {
      synchronized (this) {
        image.putBack(batch);
      }
      throw e;
    }
    Instant now = clock.instant();
    Instant oldest = batch.stream().map(DesiredImage.Change::since).min(Instant::compareTo).orElse(now);
    synchronized (this) {
      published += batch.size();
      lastPublishLag = Duration.between(oldest, now).isNegative() ? Duration.ZERO : Duration.between(oldest, now);
    }
    return true;
  }

  @Override
  public synchronized boolean awaitInSync(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!(connected && image.backlogEmpty() && !needReconcile && reconciles > 0)) {
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
    Duration oldest = image.oldestWait(clock.instant());
    return new PublisherStatus(connected, client.endpoint().toString(), leaseId, leaseTtlLeft(), image.backlog(), oldest,
        lastPublishLag, published, etcdErrors, reconciles, image.overflows(), lastError);
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
