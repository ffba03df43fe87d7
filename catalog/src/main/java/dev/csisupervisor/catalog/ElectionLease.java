package dev.csisupervisor.catalog;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease a controller agent's election keys are on: granted at the first campaign, kept alive from the catalog's
 * shared timer, and known to be alive until the send time of the last answered keep-alive plus its TTL (the renew
 * deadline its CSI calls must end before). When a keep-alive fails, the lease is taken for lost at once: the
 * listeners hear it (the controller cancels its calls) and the next campaign takes a new one. Thread-safe.
 */
final class ElectionLease implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ElectionLease.class);
  private static final ScheduledExecutorService KEEPALIVE = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "cluster-volumes-keepalive");
    t.setDaemon(true);
    return t;
  });

  private final EtcdOps ops;
  private final String nodeId;
  private final long ttlSeconds;
  /** Told when the lease is lost. */
  private final List<Runnable> lostListeners = new CopyOnWriteArrayList<>();
  private final Object lock = new Object();
  private long leaseId; // guarded by lock
  /** nanoTime until which the lease is sure to live (the last answered keep-alive's send time + TTL). */
  private long sureUntil; // guarded by lock
  private LeaseKeepAlive keepAlive; // guarded by lock
  private boolean closed; // guarded by lock

  ElectionLease(EtcdOps ops, String nodeId, long ttlSeconds) {
    this.ops = ops;
    this.nodeId = nodeId;
    this.ttlSeconds = ttlSeconds;
  }

  /** The lease, granted (and kept alive) if there is none. */
  long get() {
    synchronized (lock) {
      if (closed) {
        throw new EtcdException("cluster volumes closed", "CLOSED", null);
      }
      if (leaseId != 0) {
        return leaseId;
      }
      long asked = System.nanoTime();
      long id = ops.call(() -> ops.client.grantLease(ttlSeconds));
      leaseId = id;
      sureUntil = asked + TimeUnit.SECONDS.toNanos(ttlSeconds);
      keepAlive = LeaseKeepAlive.start(ops.client, id, ttlSeconds, KEEPALIVE, (LeaseKeepAlive.Answered) (ttl, sent) -> {
        synchronized (lock) {
          if (leaseId == id) {
            sureUntil = Math.max(sureUntil, sent + TimeUnit.SECONDS.toNanos(ttl));
          }
        }
      }, (ka, e) -> lost(ka, id, e));
      return id;
    }
  }

  private void lost(LeaseKeepAlive ka, long id, EtcdException e) {
    synchronized (lock) {
      if (ka != keepAlive) {
        return;
      }
      log.warn("cluster volumes: election lease {} of node {} lost ({}); campaigning again with a new one",
          Long.toHexString(id), nodeId, e.getMessage());
      keepAlive.stop();
      keepAlive = null;
      leaseId = 0;
      sureUntil = 0;
      ops.client.failover();
    }
    for (Runnable r : lostListeners) {
      try {
        r.run();
      } catch (RuntimeException x) {
        log.warn("cluster volumes: a lease-lost listener failed", x);
      }
    }
  }

  /** The lease now; 0 without one (none granted yet, or lost). */
  long current() {
    synchronized (lock) {
      return leaseId;
    }
  }

  /** How long lease {@code id} is sure to live; zero if it is not the current one. */
  Duration left(long id) {
    synchronized (lock) {
      if (closed || leaseId == 0 || leaseId != id) {
        return Duration.ZERO;
      }
      long left = sureUntil - System.nanoTime();
      return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
    }
  }

  void onLost(Runnable lost) {
    lostListeners.add(Objects.requireNonNull(lost, "lost"));
  }

  /** Stops the keep-alive and revokes the lease (its election keys go at once). Idempotent. */
  @Override
  public void close() {
    long lease;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      lease = leaseId;
      if (keepAlive != null) {
        keepAlive.stop();
        keepAlive = null;
      }
      leaseId = 0;
    }
    if (lease != 0) {
      try {
        ops.client.revokeLease(lease);
      } catch (EtcdException e) {
        log.warn("cluster volumes: could not revoke election lease {} (it expires with its TTL): {}",
            Long.toHexString(lease), e.getMessage());
      }
    }
  }
}
