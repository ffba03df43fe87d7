package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Event;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.WatchCreateRequest;
import dev.csisupervisor.catalog.etcdpb.WatchProgressRequest;
import dev.csisupervisor.catalog.etcdpb.WatchRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import dev.csisupervisor.common.Backoff;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd cluster view: one {@code io} thread lists, watches and applies changes; memory and the event
 * sequence are guarded by {@code this}; events are handed to subscribers in order under the lock and
 * delivered on their executors outside it.
 */
final class EtcdClusterView implements ClusterView {
  private static final Logger log = LoggerFactory.getLogger(EtcdClusterView.class);
  private static final long CHECK_MILLIS = 100;

  private enum State { NEW, RUNNING, CLOSED }

  private final EtcdClient client;
  private final CatalogKeys keys;
  private final int maxSubscriberBacklog;
  private final ScheduledExecutorService io;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch synced = new CountDownLatch(1);
  private final List<ViewSubscriber> subscribers = new CopyOnWriteArrayList<>();

  // guarded by this
  private final Map<String, CatalogEntry> plugins = new HashMap<>();
  private final Map<String, NodeEntry> nodes = new HashMap<>();
  private final List<ClusterEvent> outbox = new ArrayList<>();
  private long revision;
  private long sequence;
  private ClusterSnapshot cached;

  // freshness: written on the io thread, read by freshness()
  private final java.time.Clock clock;
  private final long startedNanos = System.nanoTime();
  /** nanoTime of the last list, watch event, watch creation or progress answer; 0 before the first list. */
  private volatile long confirmedNanos;
  private volatile boolean watching;
  private volatile String lastError = "";
  private final long progressEveryNanos;
  private final long staleAfterNanos;

  // io thread only
  private StreamObserver<WatchRequest> watch;
  /** nanoTime the unanswered progress request was sent, 0 if none is outstanding. */
  private long progressAskedNanos;
  private final Backoff backoff;
  private int failuresInRow;
  private long badValues;
  private final java.util.concurrent.atomic.AtomicLong relists = new java.util.concurrent.atomic.AtomicLong();
  /** Set by {@link #dropWatchForTest}: no resume until it completes. */
  private volatile java.util.concurrent.CompletableFuture<?> heldForTest;
  private final java.util.concurrent.atomic.AtomicLong etcdErrors = new java.util.concurrent.atomic.AtomicLong();

  EtcdClusterView(ClusterView.Builder b) {
    this.client = b.newClient();
    this.keys = b.keys;
    this.backoff = b.newBackoff();
    this.maxSubscriberBacklog = b.maxSubscriberBacklog;
    this.clock = b.clock;
    long timeout = b.etcd.requestTimeout().toNanos();
    // With nothing to report, ask the member every request timeout whether the watch is current; an answer
    // not back within another request timeout means the member went silent.
    this.progressEveryNanos = timeout;
    this.staleAfterNanos = 2 * timeout + TimeUnit.MILLISECONDS.toNanos(CHECK_MILLIS);
    this.io = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "cluster-view");
      t.setDaemon(true);
      return t;
    });
  }

  @Override
  public void start() {
    if (!state.compareAndSet(State.NEW, State.RUNNING)) {
      throw new IllegalStateException("cluster view is " + state.get().name().toLowerCase() + ", cannot start");
    }
    io.execute(this::relist);
    long every = Math.max(CHECK_MILLIS, TimeUnit.NANOSECONDS.toMillis(progressEveryNanos) / 4);
    io.scheduleWithFixedDelay(this::checkWatch, every, every, TimeUnit.MILLISECONDS);
  }

  @Override
  public boolean awaitSynced(Duration timeout) throws InterruptedException {
    return synced.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public synchronized ClusterSnapshot snapshot() {
    if (cached == null) {
      cached = ClusterSnapshot.of(revision, nodes.values(), plugins.values());
    }
    return cached;
  }

  /** The revision the view reflects. */
  synchronized long revision() {
    return revision;
  }

  @Override
  public ClusterSubscription subscribe(ClusterListener listener, Executor executor) {
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(executor, "executor");
    synchronized (this) {
      if (state.get() == State.CLOSED) {
        throw new IllegalStateException("cluster view is closed");
      }
      ViewSubscriber[] self = new ViewSubscriber[1];
      self[0] = new ViewSubscriber(listener, executor, snapshot(), sequence, maxSubscriberBacklog,
          () -> subscribers.remove(self[0]));
      subscribers.add(self[0]);
      return self[0];
    }
  }

  // ---- io thread -----------------------------------------------------------------------------

  /** Step 1: list at one revision and emit the difference to memory. Step 2: watch from the next revision. */
  private void relist() {
    if (state.get() != State.RUNNING) {
      return;
    }
    try {
      Map<String, CatalogEntry> p = new HashMap<>();
      Map<String, NodeEntry> n = new HashMap<>();
      long rev = CatalogListing.list(client, keys, p, n, false);
      synchronized (this) {
        for (var e : new ArrayList<>(plugins.entrySet())) {
          if (!p.containsKey(e.getKey())) {
            plugins.remove(e.getKey());
            emit(rev, ClusterEvent.Kind.PLUGIN_REMOVED, e.getValue(), null);
          }
        }
        for (var e : new ArrayList<>(nodes.entrySet())) {
          if (!n.containsKey(e.getKey())) {
            nodes.remove(e.getKey());
            emit(rev, ClusterEvent.Kind.NODE_REMOVED, null, e.getValue());
          }
        }
        n.forEach((k, v) -> putNode(rev, k, v));
        p.forEach((k, v) -> putPlugin(rev, k, v));
        revision = rev;
        cached = null;
      }
      confirmedNanos = System.nanoTime();
      deliver();
      synced.countDown();
      relists.incrementAndGet();
      log.info("cluster view: listed {} node(s), {} registration(s) under {} at revision {}", n.size(), p.size(), keys, rev);
      openWatch(rev + 1);
    } catch (EtcdException e) {
      retry(e, this::relist);
    }
  }

  private void openWatch(long fromRevision) {
    closeWatch();
    AtomicReference<StreamObserver<WatchRequest>> self = new AtomicReference<>();
    StreamObserver<WatchRequest> stream = client.watch(new StreamObserver<>() {
      @Override
      public void onNext(WatchResponse r) {
        execute(() -> onWatch(self.get(), r));
      }

      @Override
      public void onError(Throwable t) {
        EtcdException e = client.translate("watch " + keys.root(), t);
        execute(() -> {
          if (watch == self.get()) {
            watch = null;
            retry(e, () -> resume());
          }
        });
      }

      @Override
      public void onCompleted() {
        execute(() -> {
          if (watch == self.get()) {
            watch = null;
            retry(new EtcdException("watch ended by etcd", "WATCH_ENDED", null), () -> resume());
          }
        });
      }
    });
    self.set(stream);
    watch = stream;
    watching = false; // until etcd says the watch is created
    progressAskedNanos = 0;
    ByteString key = EtcdClient.bytes(keys.root());
    stream.onNext(WatchRequest.newBuilder().setCreateRequest(WatchCreateRequest.newBuilder()
        .setKey(key).setRangeEnd(EtcdClient.prefixEnd(key)).setStartRevision(fromRevision).setProgressNotify(true)).build());
  }

  /** After a disconnect: watch again from the last revision seen (a compacted one makes etcd say so: re-list). */
  private void resume() {
    if (state.get() != State.RUNNING) {
      return;
    }
    java.util.concurrent.CompletableFuture<?> held = heldForTest;
    if (held != null && !held.isDone()) {
      return; // a test dropped the watch and resumes it itself (a retry pending from before must not beat it)
    }
    long from;
    synchronized (this) {
      from = revision + 1;
    }
    try {
      // A cheap request first, so an unreachable etcd fails here and backs off (a stream fails lazily).
      client.range(RangeRequest.newBuilder().setKey(EtcdClient.bytes(keys.nodesRoot())).setCountOnly(true).build());
      openWatch(from);
    } catch (EtcdException e) {
      retry(e, this::resume);
    }
  }

  private void onWatch(StreamObserver<WatchRequest> stream, WatchResponse r) {
    if (stream != watch || state.get() != State.RUNNING) {
      return;
    }
    if (r.getCompactRevision() != 0) {
      log.info("cluster view: revision {} was compacted (etcd compacted to {}); re-listing", revision() + 1, r.getCompactRevision());
      closeWatch();
      relist();
      return;
    }
    if (r.getCanceled()) {
      closeWatch();
      retry(new EtcdException("watch canceled by etcd: " + r.getCancelReason(), "WATCH_CANCELED", null), this::resume);
      return;
    }
    // Any answer on a live watch stream confirms the view as of the revision it carries.
    progressAskedNanos = 0;
    confirmedNanos = System.nanoTime();
    watching = true;
    if (failuresInRow > 0 && (r.getCreated() || r.getEventsCount() > 0)) {
      log.info("cluster view: watching {} again from revision {}", keys, revision() + 1);
      failuresInRow = 0;
      backoff.reset();
    }
    synchronized (this) {
      for (Event ev : r.getEventsList()) {
        KeyValue kv = ev.getKv();
        String key = kv.getKey().toStringUtf8();
        long rev = kv.getModRevision();
        if (ev.getType() == Event.EventType.DELETE) {
          CatalogEntry p = plugins.remove(key);
          if (p != null) {
            emit(rev, ClusterEvent.Kind.PLUGIN_REMOVED, p, null);
          }
          NodeEntry n = nodes.remove(key);
          if (n != null) {
            emit(rev, ClusterEvent.Kind.NODE_REMOVED, null, n);
          }
        } else {
          Map<String, CatalogEntry> p = new HashMap<>(1);
          Map<String, NodeEntry> n = new HashMap<>(1);
          if (CatalogListing.decode(keys, kv, p, n)) {
            p.forEach((k, v) -> putPlugin(rev, k, v));
            n.forEach((k, v) -> putNode(rev, k, v));
          } else if (key.startsWith(keys.nodesRoot()) || key.startsWith(keys.pluginsRoot())) {
            badValues++; // volumes, claims, attachments and controllers are not the view's
          }
        }
        revision = Math.max(revision, rev);
      }
      if (r.getEventsCount() == 0 && r.getHeader().getRevision() > revision && !r.getCreated()) {
        revision = r.getHeader().getRevision(); // progress notification
      }
      cached = null;
    }
    deliver();
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
  private void deliver() {
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

  private void retry(EtcdException e, Runnable step) {
    if (state.get() != State.RUNNING) {
      return;
    }
    failuresInRow++;
    etcdErrors.incrementAndGet();
    watching = false;
    lastError = e.getMessage();
    Duration delay = backoff.next();
    log.warn("cluster view: etcd unavailable (attempt {}): {}; retrying in {} ms", failuresInRow, e.getMessage(), delay.toMillis());
    client.failover();
    try {
      io.schedule(step, delay.toMillis(), TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException ignored) {
      // closing
    }
  }

  private void execute(Runnable r) {
    try {
      io.execute(r);
    } catch (RejectedExecutionException ignored) {
      // closing
    }
  }

  private void closeWatch() {
    StreamObserver<WatchRequest> w = watch;
    watch = null;
    watching = false;
    if (w != null) {
      try {
        EtcdClient.cancel(w, "watch closed");
      } catch (RuntimeException ignored) {
        // already broken
      }
    }
  }

  /**
   * On the io thread, every quarter request timeout: a quiet watch is asked for progress (etcd answers with its
   * current revision); one whose question has waited a whole request timeout is on a member that stopped
   * answering (stopped, partitioned, overloaded): the view leaves it for the next member.
   */
  private void checkWatch() {
    if (state.get() != State.RUNNING || watch == null || !watching) {
      return;
    }
    long now = System.nanoTime();
    if (progressAskedNanos != 0) {
      if (now - progressAskedNanos > progressEveryNanos) {
        EtcdException e = new EtcdException("etcd " + client.endpoint() + ": watch silent for "
            + TimeUnit.NANOSECONDS.toMillis(now - progressAskedNanos) + " ms (progress request unanswered)",
            "DEADLINE_EXCEEDED", null);
        closeWatch();
        retry(e, this::resume);
      }
      return;
    }
    if (now - confirmedNanos >= progressEveryNanos) {
      progressAskedNanos = now;
      try {
        watch.onNext(WatchRequest.newBuilder().setProgressRequest(WatchProgressRequest.getDefaultInstance()).build());
      } catch (RuntimeException e) {
        closeWatch();
        retry(client.translate("watch progress request", e), this::resume);
      }
    }
  }

  @Override
  public ViewFreshness freshness() {
    long confirmed = confirmedNanos;
    long now = System.nanoTime();
    Instant wall = clock.instant();
    Instant lastConfirmed = confirmed == 0 ? null : wall.minusNanos(now - confirmed);
    boolean stale = confirmed == 0 || !watching || now - confirmed > staleAfterNanos;
    Instant staleSince = !stale ? null : lastConfirmed != null ? lastConfirmed : wall.minusNanos(now - startedNanos);
    return new ViewFreshness(revision(), lastConfirmed, stale, staleSince, client.endpoint().toString(), lastError);
  }

  /** How many full lists were loaded (1 after start; one more per compaction-forced re-list). */
  long relists() {
    return relists.get();
  }

  /** Failed etcd requests or watch streams so far. */
  long etcdErrors() {
    return etcdErrors.get();
  }

  /**
   * For tests: drops the watch as a broken connection would (counted as an etcd error); it resumes once
   * {@code resume} completes, so a test can change etcd in between without racing the backoff.
   */
  void dropWatchForTest(java.util.concurrent.CompletableFuture<?> resume) {
    heldForTest = resume;
    execute(() -> {
      closeWatch();
      etcdErrors.incrementAndGet();
      lastError = "watch dropped by a test";
      resume.thenRun(() -> execute(this::resume));
    });
  }

  @Override
  public void close() {
    if (state.getAndSet(State.CLOSED) == State.CLOSED) {
      return;
    }
    try {
      io.submit(this::closeWatch).get(2, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // best effort
    }
    io.shutdownNow();
    for (ViewSubscriber s : subscribers) {
      s.close();
    }
    client.close();
  }
}
