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
 * One etcd watch stream kept open: when it fails, ends, or its {@link Handler} asks (etcd compacted past it), it is
 * opened again after {@link #REOPEN_AFTER_MS} on the next endpoint, with the create requests the handler gives
 * then (after, for a mirror, listing again). Responses reach the handler only from the current stream.
 *
 * <p>At most one stream is open, whatever fails while one is being opened (the handler's preparation or the open
 * throwing, a create request refused, the stream failing before the open returns): a stream that is not the
 * current one is cancelled, and at most one reopen is ever pending.
 */
final class SingleWatch implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(SingleWatch.class);
  static final long REOPEN_AFTER_MS = 1000;

  /** What the stream does; called on etcd client threads, or the opening thread for {@link #creates}. */
  interface Handler {
    /** Before each open: the watch create requests of the new stream (throwing makes the open fail and retry). */
    List<WatchCreateRequest> creates();

    /** A response of the current stream; a reason to open it again, or null. */
    String onResponse(WatchResponse response);

    /** The current stream ended or could not be opened. */
    void onDown();

    /** A stream is open again after one that failed. */
    void onReopened();
  }

  /** What the watch needs of an etcd client. */
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

  static Watcher of(EtcdClient client, String what) {
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
        return client.translate("watch " + what, t).getMessage();
      }

      @Override
      public void cancel(StreamObserver<WatchRequest> stream, String why) {
        EtcdClient.cancel(stream, why);
      }
    };
  }

  private final Watcher watcher;
  private final String what;
  private final Handler handler;
  private final Executor reopenDelay;
  private StreamObserver<WatchRequest> stream; // guarded by this
  /** The open's own token: a stream's end counts only while its open is the current one. */
  private Object current; // guarded by this
  private boolean closed; // guarded by this
  private boolean reopenPending; // guarded by this
  private String lastFailure = ""; // guarded by this

  SingleWatch(EtcdClient client, String what, Handler handler) {
    this(of(client, what), what, handler, CompletableFuture.delayedExecutor(REOPEN_AFTER_MS, TimeUnit.MILLISECONDS));
  }

  /** @param reopenDelay runs a reopen after the delay ({@link #REOPEN_AFTER_MS} outside tests) */
  SingleWatch(Watcher watcher, String what, Handler handler, Executor reopenDelay) {
    this.watcher = watcher;
    this.what = what;
    this.handler = handler;
    this.reopenDelay = reopenDelay;
  }

  /** Opens the watch (a failure to open is retried like a failed stream). */
  synchronized SingleWatch open() {
    reopenPending = false;
    if (closed) {
      return this;
    }
    Object token = new Object();
    current = token;
    StreamObserver<WatchRequest> s = null;
    try {
      List<WatchCreateRequest> creates = handler.creates();
      s = watcher.watch(new StreamObserver<>() {
        @Override
        public void onNext(WatchResponse r) {
          response(token, r);
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
      for (WatchCreateRequest c : creates) {
        s.onNext(WatchRequest.newBuilder().setCreateRequest(c).build());
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
    handler.onDown();
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

  private void response(Object token, WatchResponse r) {
    synchronized (this) {
      if (closed || current != token) {
        return; // a stream an earlier open made
      }
    }
    String restart;
    try {
      restart = handler.onResponse(r);
    } catch (RuntimeException e) {
      restart = "the watch's handler failed: " + e;
      log.warn("{}", restart, e);
    }
    if (restart != null) {
      StreamObserver<WatchRequest> s;
      synchronized (this) {
        s = current == token ? stream : null;
      }
      ended(token, restart);
      cancelQuietly(s, restart);
    }
  }

  /** A list of one prefix's keys, as a create request. */
  static WatchCreateRequest prefix(String prefix, long startRevision) {
    ByteString key = EtcdClient.bytes(prefix);
    return WatchCreateRequest.newBuilder().setKey(key).setRangeEnd(EtcdClient.prefixEnd(key))
        .setStartRevision(startRevision).build();
  }

  private void ended(Object token, String why) {
    synchronized (this) {
      if (closed || current != token) {
        return; // closed, or a stream an earlier open made (already replaced)
      }
      current = null;
      stream = null;
    }
    handler.onDown();
    reopenLater(why);
  }

  private void reopenLater(String why) {
    synchronized (this) {
      if (closed || reopenPending) {
        return;
      }
      reopenPending = true;
      if (!why.equals(lastFailure)) {
        log.debug("watch of {}: {}; opened again in {} ms", what, why, REOPEN_AFTER_MS);
      }
      lastFailure = why;
    }
    watcher.failover();
    reopenDelay.execute(() -> {
      if (open().isOpen()) {
        handler.onReopened(); // whatever changed while it was down
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
    cancelQuietly(s, "watch closed"); // found by a test closing a controller agent mid-publish
  }
}
