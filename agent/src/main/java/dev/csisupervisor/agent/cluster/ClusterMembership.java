package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.catalog.PublisherStatus;
import dev.csisupervisor.registry.PluginRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The agent's place in the cluster catalog across reloads: at most one {@link ClusterNode} at a time, replaced
 * when the config's {@code cluster:} section changes ({@link #apply}), so a new etcd, node id, prefix, lease TTL,
 * TLS file or user takes effect without restarting the agent. The catalog metrics follow whichever node is
 * current. Thread-safe; {@link #close()} is idempotent.
 */
public final class ClusterMembership implements AutoCloseable {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ClusterMembership.class);
  /** What the metrics report while the agent is in no cluster. */
  private static final PublisherStatus NONE = new PublisherStatus(false, "", 0, Duration.ZERO, 0, Duration.ZERO,
      Duration.ZERO, 0, 0, 0, 0, "");

  private final PluginRegistry registry;
  private final AgentMetrics metrics;
  private volatile ClusterNode node;
  private final String instance;
  private boolean metricsRegistered;
  private boolean closed;

  /** @param instance this agent's instance token ({@link NodeInstance}) */
  public ClusterMembership(PluginRegistry registry, AgentMetrics metrics, String instance) {
    this.registry = Objects.requireNonNull(registry, "registry");
    this.metrics = metrics;
    this.instance = Objects.requireNonNull(instance, "instance");
  }

  /**
   * Makes the membership what {@code next} says: joins, leaves (the old node's lease is revoked, so its entries
   * go now), or leaves and joins again with the new settings; nothing when they are the same. Returns one line
   * per change, for the reload's answer.
   *
   * @throws dev.csisupervisor.catalog.NodeIdInUseException if the new node id is another live agent's (nothing
   *     is changed then)
   */
  public synchronized List<String> apply(Optional<ClusterConfig> next) {
    List<String> changes = new ArrayList<>();
    if (closed) {
      return changes;
    }
    ClusterNode old = node;
    ClusterConfig was = old == null ? null : old.config();
    if (Objects.equals(was, next.orElse(null))) {
      return changes;
    }
    if (next.isPresent() && (was == null || !was.nodeId().equals(next.get().nodeId()))) {
      ClusterNode.checkNodeId(next.get(), instance); // refused before anything is left
    }
    if (old != null) {
      node = null;
      old.close();
      if (next.isEmpty()) {
        changes.add("cluster: left the catalog (node " + was.nodeId() + ")");
      }
    }
    if (next.isPresent()) {
      ClusterConfig c = next.get();
      if (metrics != null && !metricsRegistered) {
        metrics.watchCatalog(() -> Optional.ofNullable(node).map(ClusterNode::status).orElse(NONE));
        metricsRegistered = true;
      }
      node = ClusterNode.start(c, registry, instance);
      changes.add(was == null ? "cluster: joined the catalog as node " + c.nodeId() + " at " + c.etcd().endpoints()
          : "cluster: settings changed (" + String.join(", ", differences(was, c)) + "): publishing again as node "
              + c.nodeId());
    }
    changes.forEach(ch -> log.info("{}", ch));
    return changes;
  }

  /** The names of the settings that differ, in config terms. */
  private static List<String> differences(ClusterConfig a, ClusterConfig b) {
    List<String> out = new ArrayList<>();
    if (!a.etcd().endpoints().equals(b.etcd().endpoints())) {
      out.add("endpoints");
    }
    if (!a.nodeId().equals(b.nodeId())) {
      out.add("node_id");
    }
    if (!a.prefix().equals(b.prefix())) {
      out.add("prefix");
    }
    if (!a.leaseTtl().equals(b.leaseTtl())) {
      out.add("lease_ttl");
    }
    if (!a.detachAfter().equals(b.detachAfter())) {
      out.add("detach_after");
    }
    if (!a.etcd().requestTimeout().equals(b.etcd().requestTimeout())) {
      out.add("request_timeout");
    }
    if (!Objects.equals(a.etcd().caFile(), b.etcd().caFile()) || !Objects.equals(a.etcd().certFile(), b.etcd().certFile())
        || !Objects.equals(a.etcd().keyFile(), b.etcd().keyFile())) {
      out.add("tls");
    }
    if (!Objects.equals(a.etcd().user(), b.etcd().user()) || !Objects.equals(a.etcd().password(), b.etcd().password())) {
      out.add("user/password");
    }
    return out;
  }

  /** The current node's config and publisher state; empty while the agent is in no cluster. */
  public Optional<ClusterNode> node() {
    return Optional.ofNullable(node);
  }

  /** Leaves the catalog (the lease is revoked). Idempotent. */
  @Override
  public synchronized void close() {
    closed = true;
    ClusterNode n = node;
    node = null;
    if (n != null) {
      n.close();
    }
  }
}
