package dev.csisupervisor.catalog;

import java.util.Objects;

/**
 * The node id is held in the catalog by another agent that is alive (its node key, on its lease, carries another
 * instance token): two agents with one node id would each take the other's claims for their own, so the second
 * is refused until the first stops or its lease expires.
 */
public final class NodeIdInUseException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final transient NodeEntry holder;

  public NodeIdInUseException(String nodeId, NodeEntry holder) {
    super("node id " + nodeId + " is in use by another agent (host " + holder.hostname() + ", started "
        + holder.startedAt() + "): every agent needs its own cluster.node_id; if that agent is gone, its entry "
        + "expires with its lease (" + holder.leaseTtlSeconds() + "s)");
    this.holder = Objects.requireNonNull(holder, "holder");
  }

  /** The live agent's entry. */
  public NodeEntry holder() {
    return holder;
  }
}
