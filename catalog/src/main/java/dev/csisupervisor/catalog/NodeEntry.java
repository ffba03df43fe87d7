package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Instant;

/**
 * A node as the catalog holds it, under {@code <prefix>/nodes/<nodeId>} on the node's lease: present exactly
 * while the node's agent keeps its lease alive.
 *
 * @param nodeId the node
 * @param hostname the host the agent runs on
 * @param startedAt when this publisher (agent run) started
 * @param leaseTtlSeconds the TTL of the node's lease
 */
public record NodeEntry(String nodeId, String hostname, Instant startedAt, long leaseTtlSeconds) {
  public NodeEntry {
    CatalogKeys.checkNodeId(nodeId);
    if (hostname == null) {
      throw new IllegalArgumentException("hostname must not be null");
    }
    if (startedAt == null) {
      throw new IllegalArgumentException("startedAt must not be null");
    }
    Bounds.atLeast(leaseTtlSeconds, 1, "leaseTtlSeconds");
  }
}
