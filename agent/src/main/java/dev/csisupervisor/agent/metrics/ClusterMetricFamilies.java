package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.catalog.PublisherStatus;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The cluster's families of {@link AgentMetrics}: the catalog publisher, the cluster volumes this agent acts on as
 * controller agent, and the STUCK items of the cluster's volumes.
 */
final class ClusterMetricFamilies {
  private final MetricFamilies make;

  ClusterMetricFamilies(MetricFamilies make) {
    this.make = make;
  }

  /** Reports the cluster catalog publisher's state at each scrape (issue 13). */
  void watchCatalog(Supplier<PublisherStatus> status) {
    requireNonNull(status, "status");
    make.gaugeOf("csi_agent_catalog_connected",
        "1 while the node's etcd lease is alive and the catalog is being kept in sync",
        () -> status.get().connected() ? 1 : 0);
    make.gaugeOf("csi_agent_catalog_backlog",
        "Registry changes not yet written to etcd (coalesced per key)",
        () -> status.get().backlog());
    make.gaugeOf("csi_agent_catalog_oldest_pending_seconds",
        "Age of the oldest registry change not yet written to etcd",
        () -> status.get().oldestPending().toNanos() / 1e9);
    make.gaugeOf("csi_agent_catalog_publish_lag_seconds",
        "Last write: time from the registry change to etcd's acknowledgement",
        () -> status.get().lastPublishLag().toNanos() / 1e9);
    make.counterOf("csi_agent_catalog_etcd_errors_total",
        "Failed etcd requests of the catalog publisher (each one a backoff step)",
        () -> status.get().etcdErrors());
    make.counterOf("csi_agent_catalog_published_total",
        "Catalog keys written or deleted in etcd",
        () -> status.get().published());
    make.counterOf("csi_agent_catalog_reconciles_total",
        "Full reconciliations of the node's catalog keys (start, reconnect, overflow)",
        () -> status.get().reconciles());
  }

  /**
   * Reports cluster volumes at each scrape: plugin ids this agent is the controller agent of, its controller
   * publishes, unpublishes and fenced claims, its creates and deletes, and this node's claim releases still waiting
   * for etcd.
   */
  void watchClusterVolumes(LongSupplier leading, LongSupplier publishes, LongSupplier unpublishes,
      LongSupplier fenced, LongSupplier creates, LongSupplier deletes, LongSupplier pendingReleases) {
    make.gaugeOf("csi_agent_cluster_volume_controller_plugins",
        "Plugin ids this agent is the elected controller agent of", leading::getAsLong);
    make.counterOf("csi_agent_cluster_volume_publishes_total",
        "ControllerPublishVolume calls this agent made as controller agent that succeeded", publishes::getAsLong);
    make.counterOf("csi_agent_cluster_volume_unpublishes_total",
        "ControllerUnpublishVolume calls this agent made as controller agent that succeeded", unpublishes::getAsLong);
    make.counterOf("csi_agent_cluster_volume_fenced_claims_total",
        "Claims of lost nodes released after detach_after and a successful unpublish (the fence)",
        fenced::getAsLong);
    make.counterOf("csi_agent_cluster_volume_creates_total",
        "CreateVolume calls this agent made as controller agent for create requests that succeeded",
        creates::getAsLong);
    make.counterOf("csi_agent_cluster_volume_deletes_total",
        "DeleteVolume calls this agent made as controller agent for delete requests that succeeded (NOT_FOUND included)",
        deletes::getAsLong);
    make.gaugeOf("csi_agent_cluster_volume_pending_releases",
        "Claim releases of this node waiting for etcd (its volumes are unmounted)", pendingReleases::getAsLong);
  }

  /** Reports the controller agent's health and capacity checks (ControllerChecks). */
  void watchClusterChecks(LongSupplier rounds, LongSupplier republished, LongSupplier unrecordedPublications) {
    make.counterOf("csi_agent_cluster_volume_checks_total",
        "Health and capacity checks of the led plugin ids this agent made as controller agent", rounds::getAsLong);
    make.counterOf("csi_agent_cluster_volume_republishes_total",
        "ATTACHED attachments published again because the plugin no longer listed them (LIST_VOLUMES_PUBLISHED_NODES)",
        republished::getAsLong);
    make.gaugeOf("csi_agent_cluster_volume_unrecorded_publications",
        "Publications the led plugins list that no attachment records, at the last check (reported only)",
        unrecordedPublications::getAsLong);
  }

  /**
   * Reports the cluster's STUCK items by kind (request_failed, request_retried, no_controller, lost_node_claim,
   * attachment_failed) from the agent's last read of etcd; nothing without a cluster.
   */
  void watchClusterStuck(Supplier<Map<String, Long>> byKind) {
    requireNonNull(byKind, "byKind");
    make.gaugeByLabel("csi_agent_cluster_volume_stuck",
        "STUCK items of the cluster's volumes by kind, as csi-agent cluster volume status lists them, from"
            + " this agent's last read of etcd", "kind", byKind);
  }
}
