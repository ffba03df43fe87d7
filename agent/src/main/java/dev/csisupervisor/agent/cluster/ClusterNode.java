package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.PublisherStatus;
import dev.csisupervisor.registry.PluginRegistry;
import java.util.Objects;

/**
 * The agent's membership in the cluster catalog with one {@code cluster:} config: a {@link CatalogPublisher} of
 * the agent's registry and its lifecycle ({@link ClusterMembership} replaces it when the config changes). etcd being unreachable never stops the agent: the publisher starts anyway and
 * retries with backoff, one log line per step. Thread-safe; {@link #close()} is idempotent.
 */
public final class ClusterNode implements AutoCloseable {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ClusterNode.class);

  private final ClusterConfig config;
  private final CatalogPublisher publisher;

  private ClusterNode(ClusterConfig config, CatalogPublisher publisher) {
    this.config = config;
    this.publisher = publisher;
  }

  /** Starts publishing {@code registry} as {@code config} says. Returns at once. */
  public static ClusterNode start(ClusterConfig config, PluginRegistry registry) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(registry, "registry");
    CatalogPublisher p = CatalogPublisher.builder()
        .registry(registry)
        .etcd(config.etcd())
        .nodeId(config.nodeId())
        .prefix(config.prefix())
        .leaseTtl(config.leaseTtl())
        .build();
    p.start();
    log.info("cluster: node {} publishes to etcd {} under {}", config.nodeId(), config.etcd().endpoints(), config.prefix());
    return new ClusterNode(config, p);
  }

  public ClusterConfig config() {
    return config;
  }

  public PublisherStatus status() {
    return publisher.status();
  }

  /** Leaves the catalog: the node's lease is revoked, so its entries disappear now. */
  @Override
  public void close() {
    publisher.close();
  }
}
