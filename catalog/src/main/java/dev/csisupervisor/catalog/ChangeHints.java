package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.WatchCreateRequest;
import dev.csisupervisor.catalog.etcdpb.WatchRequest;
import dev.csisupervisor.catalog.etcdpb.WatchResponse;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A watch of some key prefixes that only says "something changed" ({@link ClusterVolumes#watchChanges}): no events
 * are decoded, no revision is kept, and a change made while the watch is down is not replayed. The caller reads
 * the state itself (level-triggered); the hint lets it do so at once instead of at its next timer tick, and it
 * keeps the timer for when the hint is silent. When the stream fails or ends, the watch is opened again after
 * {@link #REOPEN_AFTER_MS} on the next endpoint, and the hint is given once (changes may have been missed).
 */
final class ChangeHints implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ChangeHints.class);
  static final long REOPEN_AFTER_MS = 1000;

  private final EtcdClient client;
  private final List<String> prefixes;
  private final Runnable changed;
  private StreamObserver<WatchRequest> stream; // guarded by this
  /** The open's own token: a stream's end counts only while its open is the current one. */
  private Object current; // guarded by this
  private boolean closed; // guarded by this
  private String lastFailure = ""; // guarded by this

  ChangeHints(EtcdClient client, List<String> prefixes, Runnable changed) {
    this.client = client;
    this.prefixes = List.copyOf(prefixes);
    this.changed = changed;
  }

  /** Opens the watch (a failure to open is retried like a failed stream). */
  synchronized ChangeHints open() {
    if (closed) {
      return this;
    }
    Object token = new Object();
    current = token;
    StreamObserver<WatchRequest> s;
    try {
      s = client.watch(new StreamObserver<>() {
        @Override
        public void onNext(WatchResponse r) {
          if (r.getEventsCount() > 0) {
            hint();
          }
        }

        @Override
        public void onError(Throwable t) {
          ended(token, client.translate("watch " + prefixes, t).getMessage());
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
        return this;
      }
      reopenLater(e.getMessage());
      return this;
    } catch (RuntimeException e) {
      reopenLater(e.toString());
      return this;
    }
    if (current == token) {
      stream = s; // unless it failed already, while being opened
    }
    return this;
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
      if (!why.equals(lastFailure)) {
        log.debug("change hints on {}: {}; opened again in {} ms", prefixes, why, REOPEN_AFTER_MS);
      }
      lastFailure = why;
    }
    client.failover();
    CompletableFuture.delayedExecutor(REOPEN_AFTER_MS, TimeUnit.MILLISECONDS).execute(() -> {
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
    if (s != null) {
      try {
        EtcdClient.cancel(s, "change hints closed"); // found by a test closing a controller agent mid-publish
      } catch (RuntimeException e) {
        log.debug("closing a change watch failed", e);
      }
    }
  }
}
