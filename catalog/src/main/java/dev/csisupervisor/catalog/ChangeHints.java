package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.WatchCreateRequest;
import dev.csisupervisor.catalog.etcdpb.WatchRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A watch of some key prefixes that only says "something changed" ({@link ClusterVolumes#watchChanges}): no events
 * are decoded, no revision is kept, and a change made while the watch is down is not replayed. The caller reads
 * the state itself (level-triggered); the hint lets it do so at once instead of at its next timer tick, and it
 * keeps the timer for when the hint is silent. When the stream fails or ends, the watch is opened again after
 * {@link #REOPEN_AFTER_MS} on the next endpoint, and the hint is given once (changes may have been missed).
 *
 * <p>At most one stream is open, whatever fails while one is being opened (the open itself throwing, a create
 * request refused, the stream failing before the open returns): a stream that is not the current one is cancelled,
 * and at most one reopen is ever pending.
 */
final class ChangeHints implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ChangeHints.class);
  static final long REOPEN_AFTER_MS = 1000;

  /** What the hints need of an etcd client. */
  interface Watcher {
    /** Opens a watch stream. */
    StreamObserver<WatchRequest> watch(StreamObserver<WatchResponse> responses);

    /** Moves to the next endpoint. */
    void failover();

    /** A stream failure in words. */
    String describe(Throwable t);

    /** Ends a stream this watcher opened. */
    void cancel(StreamObserver<WatchRequest> stream, String why);
  }

  static Watcher of(EtcdClient client, List<String> prefixes) {
    return new Watcher() {
      @Override
      public StreamObserver<WatchRequest> watch(StreamObserver<WatchResponse> responses) {
        return client.watch(responses);
      }

      @Override
      public void failover() {
        client.failover();
      }

      @Override
      public String describe(Throwable t) {
        return client.translate("watch " + prefixes, t).getMessage();
      }

      @Override
      public void cancel(StreamObserver<WatchRequest> stream, String why) {
        EtcdClient.cancel(stream, why);
      }
    };
  }

  private final Watcher watcher;
  private final List<String> prefixes;
  private final Runnable changed;
  private final Executor reopenDelay;
  private StreamObserver<WatchRequest> stream; // guarded by this
  /** The open's own token: a stream's end counts only while its open is the current one. */
  private Object current; // guarded by this
  private boolean closed; // guarded by this
  private boolean reopenPending; // guarded by this
  private String lastFailure = ""; // guarded by this

  ChangeHints(EtcdClient client, List<String> prefixes, Runnable changed) {
    this(of(client, prefixes), prefixes, changed,
        CompletableFuture.delayedExecutor(REOPEN_AFTER_MS, TimeUnit.MILLISECONDS));
  }

  /** @param reopenDelay runs a reopen after the delay ({@link #REOPEN_AFTER_MS} outside tests) */
  ChangeHints(Watcher watcher, List<String> prefixes, Runnable changed, Executor reopenDelay) {
    this.watcher = watcher;
    this.prefixes = List.copyOf(prefixes);
    this.changed = changed;
    this.reopenDelay = reopenDelay;
  }

  /** Opens the watch (a failure to open is retried like a failed stream). */
  synchronized ChangeHints open() {
    reopenPending = false;
    if (closed) {
      return this;
    }
    Object token = new Object();
    current = token;
    StreamObserver<WatchRequest> s = null;
    try {
      s = watcher.watch(new StreamObserver<>() {
        @Override
        public void onNext(WatchResponse r) {
          if (r.getEventsCount() > 0) {
            hint();
          }
        }

        @Override
        public void onError(Throwable t) {
          ended(token, watcher.describe(t));
        }

        @Override
        public void onCompleted() {
          ended(token, "the watch was ended by etcd");
        }
      });
      for (String prefix : prefixes) {
        ByteString key = EtcdClient.bytes(prefix);
        s.onNext(WatchRequest.newBuilder().setCreateRequest(WatchCreateRequest.newBuilder()
            .setKey(key).setRangeEnd(EtcdClient.prefixEnd(key))).build());
      }
    } catch (EtcdException e) {
      if ("CLOSED".equals(e.code())) {
        closed = true; // the client was closed under it: nothing to watch any more
      }
      failedOpen(token, s, e.getMessage());
      return this;
    } catch (RuntimeException e) {
      failedOpen(token, s, e.toString());
      return this;
    }
    if (current == token) {
      stream = s;
    } else {
      cancelQuietly(s, "the watch failed while it was being opened"); // its reopen is pending
    }
    return this;
  }

  /** An open that threw: its half-made stream ends, and one reopen is pending (unless closed). */
  private void failedOpen(Object token, StreamObserver<WatchRequest> s, String why) {
    if (current == token) {
      current = null;
    }
    cancelQuietly(s, "the watch could not be opened");
    reopenLater(why);
  }

  private void cancelQuietly(StreamObserver<WatchRequest> s, String why) {
    if (s == null) {
      return;
    }
    try {
      watcher.cancel(s, why);
    } catch (RuntimeException e) {
      log.debug("cancelling a change watch failed", e);
    }
  }

  private void hint() {
    try {
      changed.run();
    } catch (RuntimeException e) {
      log.warn("a change hint's receiver threw", e);
    }
  }

  private void ended(Object token, String why) {
    synchronized (this) {
      if (closed || current != token) {
        return; // closed, or a stream an earlier open made (already replaced)
      }
      current = null;
      stream = null;
    }
    reopenLater(why);
  }

  private void reopenLater(String why) {
    synchronized (this) {
      if (closed || reopenPending) {
        return;
      }
      reopenPending = true;
      if (!why.equals(lastFailure)) {
        log.debug("change hints on {}: {}; opened again in {} ms", prefixes, why, REOPEN_AFTER_MS);
      }
      lastFailure = why;
    }
    watcher.failover();
    reopenDelay.execute(() -> {
      if (open().isOpen()) {
        hint(); // whatever changed while it was down
      }
    });
  }

  /** Whether a stream is open (it may still fail). */
  synchronized boolean isOpen() {
    return stream != null;
  }

  @Override
  public void close() {
    StreamObserver<WatchRequest> s;
    synchronized (this) {
      closed = true;
      current = null;
      s = stream;
      stream = null;
    }
    cancelQuietly(s, "change hints closed"); // found by a test closing a controller agent mid-publish
  }
}
