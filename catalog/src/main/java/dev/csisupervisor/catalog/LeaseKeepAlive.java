package dev.csisupervisor.catalog;

import dev.csisupervisor.catalog.etcdpb.LeaseKeepAliveRequest;
import dev.csisupervisor.catalog.etcdpb.LeaseKeepAliveResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.LongConsumer;

/**
 * One lease kept alive through the member the client is on, for one connection of a publisher: a ping every
 * third of the TTL on one keep-alive stream, and the stream watched for silence. A member that stops answering
 * (stopped, partitioned, overloaded) is reported lost as soon as a ping has waited the request timeout for its
 * answer, not when the lease runs out, so the publisher can fail over and keep the same lease alive through
 * the next member. Pinged from a shared timer, not the publisher's io thread: a slow etcd call there never
 * starves the lease.
 */
final class LeaseKeepAlive {
  private final EtcdClient client;
  private final Object streamLock = new Object();
  /** Guarded by streamLock: a stream's calls must not be concurrent; null once stopped. */
  private StreamObserver<LeaseKeepAliveRequest> stream;
  private ScheduledFuture<?> task;

  private LeaseKeepAlive(EtcdClient client) {
    this.client = client;
  }

  /** Told each answer: the granted TTL (seconds) and when the ping it answers was sent (nanoTime). */
  @FunctionalInterface
  interface Answered {
    void answered(long ttlSeconds, long pingSentNanos);
  }

  /**
   * Starts keeping {@code lease} alive.
   *
   * @param answered told each granted TTL (seconds) etcd answers with
   * @param lost told once per failure of this keep-alive (an error, the stream's end, an expired lease, a ping
   *     unanswered for the request timeout), with this keep-alive, so that the owner can ignore a stopped one's
   *     last words; called on gRPC's or the timer's thread: hand it over, do not block
   */
  static LeaseKeepAlive start(EtcdClient client, long lease, long ttlSeconds, ScheduledExecutorService timer,
      LongConsumer answered, BiConsumer<LeaseKeepAlive, EtcdException> lost) {
    return start(client, lease, ttlSeconds, timer, (ttl, sent) -> answered.accept(ttl), lost);
  }

  /**
   * {@link #start(EtcdClient, long, long, ScheduledExecutorService, LongConsumer, BiConsumer)}, also telling when
   * the answered ping was sent: the lease lives at least its TTL from then (for a holder that must act only while
   * sure of its lease).
   */
  static LeaseKeepAlive start(EtcdClient client, long lease, long ttlSeconds, ScheduledExecutorService timer,
      Answered answered, BiConsumer<LeaseKeepAlive, EtcdException> lost) {
    LeaseKeepAlive ka = new LeaseKeepAlive(client);
    ka.run(lease, ttlSeconds, timer, answered, lost);
    return ka;
  }

  private void run(long lease, long ttlSeconds, ScheduledExecutorService timer, Answered answered,
      BiConsumer<LeaseKeepAlive, EtcdException> lost) {
    // Nanos when the oldest unanswered ping was sent, 0 when every ping is answered.
    AtomicLong unansweredSince = new AtomicLong();
    StreamObserver<LeaseKeepAliveRequest> requests = client.keepAlive(new StreamObserver<>() {
      @Override
      public void onNext(LeaseKeepAliveResponse r) {
        long sent = unansweredSince.getAndSet(0);
        if (r.getTTL() <= 0) {
          lost.accept(LeaseKeepAlive.this,
              new EtcdException("lease " + Long.toHexString(lease) + " expired", "LEASE_EXPIRED", null));
        } else if (sent != 0) {
          // The oldest unanswered ping: etcd renewed the lease no earlier than it was sent. An answer with none
          // outstanding (a duplicate) renews nothing we can date, and is ignored.
          answered.answered(r.getTTL(), sent);
        }
      }

      @Override
      public void onError(Throwable t) {
        lost.accept(LeaseKeepAlive.this, client.translate("lease keep-alive", t));
      }

      @Override
      public void onCompleted() {
        lost.accept(LeaseKeepAlive.this, new EtcdException("etcd " + client.endpoint()
            + ": lease keep-alive ended by etcd", "KEEPALIVE_ENDED", null));
      }
    });
    long periodNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(500, ttlSeconds * 1000 / 3));
    long timeoutNanos = client.options().requestTimeout().toNanos();
    // The timer looks often enough to notice an unanswered ping soon after its timeout.
    long tickMillis = Math.max(50, Math.min(TimeUnit.NANOSECONDS.toMillis(periodNanos),
        TimeUnit.NANOSECONDS.toMillis(timeoutNanos) / 4));
    LeaseKeepAliveRequest ping = LeaseKeepAliveRequest.newBuilder().setID(lease).build();
    long[] lastPing = {System.nanoTime()};
    synchronized (streamLock) {
      stream = requests;
      unansweredSince.set(lastPing[0]);
      requests.onNext(ping);
    }
    task = timer.scheduleAtFixedRate(() -> {
      try {
        long now = System.nanoTime();
        long waiting = unansweredSince.get();
        if (waiting != 0 && now - waiting > timeoutNanos) {
          unansweredSince.set(0); // reported once; the owner fails over
          lost.accept(this, new EtcdException("etcd " + client.endpoint() + ": lease keep-alive unanswered for "
              + TimeUnit.NANOSECONDS.toMillis(now - waiting) + " ms", Status.Code.DEADLINE_EXCEEDED.name(), null));
          return;
        }
        if (now - lastPing[0] < periodNanos) {
          return;
        }
        synchronized (streamLock) {
          if (stream != null) {
            lastPing[0] = now;
            unansweredSince.compareAndSet(0, now);
            stream.onNext(ping);
          }
        }
      } catch (RuntimeException e) {
        lost.accept(this, client.translate("lease keep-alive", e));
      }
    }, tickMillis, tickMillis, TimeUnit.MILLISECONDS);
  }

  /** Stops pinging and ends the stream; the lease itself is left to its TTL (or to a revoke by the owner). */
  void stop() {
    task.cancel(false);
    synchronized (streamLock) {
      if (stream != null) {
        try {
          stream.onCompleted();
        } catch (RuntimeException ignored) {
          // the stream is already broken
        }
        stream = null;
      }
    }
  }
}
