package dev.csisupervisor.agent;

import dev.csisupervisor.agent.cluster.ClusterNode;
import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.VolumesSnapshot;
import java.time.Clock;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's volumes as this agent last read them from etcd (every {@link #refresh} call, from the agent's
 * timer, on its I/O threads: a slow or unreachable etcd never holds a scrape or the operator page), for
 * {@code csi_agent_cluster_volume_stuck{kind}} and the page's problems. Thread-safe.
 */
final class ClusterReads {
  private static final Logger log = LoggerFactory.getLogger(ClusterReads.class);

  /** A read and when it was made. */
  record Read(VolumesSnapshot snapshot, Instant at) {}

  private final Supplier<Optional<ClusterNode>> node;
  private final Clock clock;
  private final AtomicBoolean reading = new AtomicBoolean();
  private volatile Read last;
  private volatile String lastError = "";

  ClusterReads(Supplier<Optional<ClusterNode>> node, Clock clock) {
    this.node = node;
    this.clock = clock;
  }

  /** Reads the cluster's volumes once, unless a read is still running or there is no cluster. Blocks. */
  void refresh() {
    Optional<ClusterNode> n = node.get();
    if (n.isEmpty()) {
      last = null;
      return;
    }
    if (!reading.compareAndSet(false, true)) {
      return;
    }
    try {
      last = new Read(n.get().volumes().read(), clock.instant());
      lastError = "";
    } catch (RuntimeException e) {
      // etcd unreachable: the catalog's own metric and the page say so; keep the last read, with its time.
      if (!e.toString().equals(lastError)) {
        log.debug("cluster volumes could not be read: {}", e.toString());
      }
      lastError = e.toString();
    } finally {
      reading.set(false);
    }
  }

  /** The last read, if any (none without a cluster). */
  Optional<Read> last() {
    return node.get().isEmpty() ? Optional.empty() : Optional.ofNullable(last);
  }

  /** Why the last read failed, or {@code ""}. */
  String lastError() {
    return lastError;
  }

  /** STUCK items of the last read by kind (every kind, 0 included, once there is a read). */
  Map<String, Long> stuckCounts() {
    Map<String, Long> out = new java.util.TreeMap<>();
    Optional<Read> r = last();
    if (r.isEmpty()) {
      return out;
    }
    Map<ClusterViews.StuckKind, Long> counts = new EnumMap<>(ClusterViews.StuckKind.class);
    for (ClusterViews.StuckKind k : ClusterViews.StuckKind.values()) {
      counts.put(k, 0L);
    }
    ClusterViews.stuckItems(r.get().snapshot()).forEach(s -> counts.merge(s.kind(), 1L, Long::sum));
    counts.forEach((k, v) -> out.put(k.label(), v));
    return out;
  }
}
