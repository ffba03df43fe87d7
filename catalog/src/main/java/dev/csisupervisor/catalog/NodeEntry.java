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
 * @param instance the agent's instance token (made once in its data dir): the same node id with another token is
 *     another agent, refused while this one is alive; empty from agents older than the token
 */
public record NodeEntry(String nodeId, String hostname, Instant startedAt, long leaseTtlSeconds, String instance) {
  public NodeEntry {
    if (instance == null) {
      throw new IllegalArgumentException("instance must not be null");
    }
    CatalogKeys.checkNodeId(nodeId);
    if (hostname == null) {
      throw new IllegalArgumentException("hostname must not be null");
    }
    if (startedAt == null) {
      throw new IllegalArgumentException("startedAt must not be null");
    }
    Bounds.atLeast(leaseTtlSeconds, 1, "leaseTtlSeconds");
  }

  /** Without an instance token. */
  public NodeEntry(String nodeId, String hostname, Instant startedAt, long leaseTtlSeconds) {
    this(nodeId, hostname, startedAt, leaseTtlSeconds, "");
  }

  /** Whether this entry is of the agent with token {@code instance} (an entry without one is nobody's in particular). */
  public boolean heldBy(String instance) {
    return this.instance.isEmpty() || this.instance.equals(instance);
  }
}
