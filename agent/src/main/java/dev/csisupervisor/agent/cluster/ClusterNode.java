package dev.csisupervisor.agent.cluster;

import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.registry.PluginInfo;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import dev.csisupervisor.agent.config.ClusterConfig;
import dev.csisupervisor.catalog.CatalogPublisher;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.NodeIdInUseException;
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
  private final ClusterVolumes volumes;
  private final ClusterController controller;
  private final Map<Path, CsiClient> controllerClients = new ConcurrentHashMap<>();

  private ClusterNode(ClusterConfig config, CatalogPublisher publisher, PluginRegistry registry) {
    this.config = config;
    this.publisher = publisher;
    this.volumes = ClusterVolumes.builder().etcd(config.etcd()).prefix(config.prefix()).nodeId(config.nodeId())
        .leaseTtl(config.leaseTtl()).build();
    this.controller = new ClusterController(volumes, config.nodeId(), registry, this::controllerClient,
        config.etcd().requestTimeout().multipliedBy(6),
        config.detachAfter().isZero() ? Optional.empty() : Optional.of(config.detachAfter()), Clock.systemUTC())
        .identifyCalls().secretsUnder(config.secretsDir()).start(Duration.ofSeconds(1))
        .checkEvery(config.controllerCheckInterval());
  }

  /** A client for a local controller registration, one per socket, closed with the node. */
  private CsiClient controllerClient(PluginInfo info) {
    return controllerClients.computeIfAbsent(info.socketPath(), socket -> {
      try {
        return CsiClient.create(socket);
      } catch (dev.csisupervisor.client.SocketPathTooLongException e) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
    });
  }

  /** Cluster volumes: claims, attachments, the election. */
  public ClusterVolumes volumes() {
    return volumes;
  }

  /** This agent's controller side of cluster volumes. */
  public ClusterController controller() {
    return controller;
  }

  /**
   * Refuses {@code config}'s node id if another live agent holds it in the catalog (one read); when etcd cannot
   * be read, only logs it: the publisher's create-only put of the node key refuses it once etcd answers.
   *
   * @throws NodeIdInUseException naming the other agent
   */
  public static void checkNodeId(ClusterConfig config, String instance) {
    try {
      CatalogPublisher.checkNodeIdFree(config.etcd(), config.prefix(), config.nodeId(), instance);
    } catch (EtcdException e) {
      log.warn("cluster: cannot check now that node id {} is no other agent's ({}); the catalog publisher does when "
          + "etcd answers", config.nodeId(), e.getMessage());
    }
  }

  /**
   * Starts publishing {@code registry} as {@code config} says, as the agent with instance token {@code instance}
   * ({@link NodeInstance}). Returns at once.
   */
  public static ClusterNode start(ClusterConfig config, PluginRegistry registry, String instance) {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(registry, "registry");
    CatalogPublisher p = CatalogPublisher.builder()
        .instance(instance)
        .registry(registry)
        .etcd(config.etcd())
        .nodeId(config.nodeId())
        .prefix(config.prefix())
        .leaseTtl(config.leaseTtl())
        .build();
    p.start();
    log.info("cluster: node {} publishes to etcd {} under {}", config.nodeId(), config.etcd().endpoints(), config.prefix());
    return new ClusterNode(config, p, registry);
  }

  public ClusterConfig config() {
    return config;
  }

  public PublisherStatus status() {
    return publisher.status();
  }

  /**
   * Leaves the catalog: the node's lease is revoked, so its entries disappear now. Its mounts stay (the agent's
   * tasks keep running; the package's {@code KillMode=process}), so it is first marked stopped cleanly: not a lost
   * node, never fenced, until it runs again.
   */
  @Override
  public void close() {
    controller.close();
    try {
      volumes.markStopped();
    } catch (RuntimeException e) {
      log.warn("cluster: node {} could not be marked stopped cleanly ({}): until it runs again, the cluster takes it"
          + " for a lost node (its claims stay; with detach_after, they are fenced)", config.nodeId(), e.getMessage());
    }
    volumes.close();
    controllerClients.values().forEach(CsiClient::close);
    publisher.close();
  }
}
