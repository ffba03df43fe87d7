package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.WatchCreateRequest;
import dev.csisupervisor.catalog.etcdpb.WatchProgressRequest;
import dev.csisupervisor.catalog.etcdpb.WatchRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import dev.csisupervisor.common.Backoff;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The etcd cluster view: one {@code io} thread lists, watches and applies changes to the {@link ViewContents}
 * (memory, the event sequence and the subscribers, guarded by their own lock; events delivered on each
 * subscriber's executor outside it). This class keeps the watch current: re-list after a compaction, resume
 * after a disconnect with backoff, ask a quiet watch for progress, leave a member that went silent.
 */
final class EtcdClusterView implements ClusterView {
  private static final Logger log = LoggerFactory.getLogger(EtcdClusterView.class);
  private static final long CHECK_MILLIS = 100;

  private enum State { NEW, RUNNING, CLOSED }

  private final EtcdClient client;
  private final CatalogKeys keys;
  private final ViewContents contents;
  private final ScheduledExecutorService io;
  private final AtomicReference<State> state = new AtomicReference<>(State.NEW);
  private final CountDownLatch synced = new CountDownLatch(1);

  // freshness: written on the io thread, read by freshness()
  private final Clock clock;
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
  private final AtomicLong relists = new AtomicLong();
  /** Set by {@link #dropWatchForTest}: no resume until it completes. */
  private volatile CompletableFuture<?> heldForTest;
  private final AtomicLong etcdErrors = new AtomicLong();

  EtcdClusterView(ClusterView.Builder b) {
    this.client = b.newClient();
    this.keys = b.keys;
    this.backoff = b.newFailoverBackoff();
    this.contents = new ViewContents(b.maxSubscriberBacklog);
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
  public ClusterSnapshot snapshot() {
    return contents.snapshot();
  }

  /** The revision the view reflects. */
  long revision() {
    return contents.revision();
  }

  @Override
  public ClusterSubscription subscribe(ClusterListener listener, Executor executor) {
    Objects.requireNonNull(listener, "listener");
    Objects.requireNonNull(executor, "executor");
    if (state.get() == State.CLOSED) {
      throw new IllegalStateException("cluster view is closed");
    }
    return contents.subscribe(listener, executor);
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
      contents.replaceAll(rev, p, n);
      confirmedNanos = System.nanoTime();
      contents.deliver();
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
    WatchAnswers answers = new WatchAnswers();
    StreamObserver<WatchRequest> stream = client.watch(answers);
    answers.stream.set(stream);
    watch = stream;
    watching = false; // until etcd says the watch is created
    progressAskedNanos = 0;
    ByteString key = EtcdClient.bytes(keys.root());
    stream.onNext(WatchRequest.newBuilder().setCreateRequest(WatchCreateRequest.newBuilder()
        .setKey(key).setRangeEnd(EtcdClient.prefixEnd(key)).setStartRevision(fromRevision).setProgressNotify(true)).build());
  }

  /** Hands one watch stream's answers to the io thread; those of a stream no longer {@link #watch} are dropped. */
  private final class WatchAnswers implements StreamObserver<WatchResponse> {
    final AtomicReference<StreamObserver<WatchRequest>> stream = new AtomicReference<>();

    @Override
    public void onNext(WatchResponse r) {
      execute(() -> onWatch(stream.get(), r));
    }

    @Override
    public void onError(Throwable t) {
      ended(client.translate("watch " + keys.root(), t));
    }

    @Override
    public void onCompleted() {
      ended(new EtcdException("watch ended by etcd", "WATCH_ENDED", null));
    }

    private void ended(EtcdException e) {
      execute(() -> {
        if (watch == stream.get()) {
          watch = null;
          retry(e, EtcdClusterView.this::resume);
        }
      });
    }
  }

  /** After a disconnect: watch again from the last revision seen (a compacted one makes etcd say so: re-list). */
  private void resume() {
    if (state.get() != State.RUNNING) {
      return;
    }
    CompletableFuture<?> held = heldForTest;
    if (held != null && !held.isDone()) {
      return; // a test dropped the watch and resumes it itself (a retry pending from before must not beat it)
    }
    long from = contents.revision() + 1;
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
    contents.apply(keys, r);
    contents.deliver();
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
  void dropWatchForTest(CompletableFuture<?> resume) {
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
    contents.closeSubscribers();
    client.close();
  }
}
