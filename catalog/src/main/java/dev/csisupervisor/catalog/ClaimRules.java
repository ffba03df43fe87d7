package dev.csisupervisor.catalog;

import java.util.List;
import java.util.Optional;

/**
 * The access-mode rules of one volume across the cluster: whether a new claim may join the claims the volume
 * has. Every claim's mode binds the whole set (an existing single-node writer keeps a later multi-node reader
 * off other nodes, and the other way round), so the new claim is checked against each existing one under both
 * modes. Pure and stateless.
 */
final class ClaimRules {
  private ClaimRules() {}

  /** A claim in the way and why. */
  record Conflict(ClusterClaim holder, String why) {}

  /** The first existing claim (of another allocation or node) that {@code c} may not join, if any. */
  static Optional<Conflict> conflict(ClusterClaim c, List<ClusterClaim> existing) {
    for (ClusterClaim e : existing) {
      if (e.nodeId().equals(c.nodeId()) && e.allocId().equals(c.allocId())) {
        continue; // the same claim again
      }
      Optional<String> why = violates(c.mode(), c, e).or(() -> violates(e.mode(), c, e));
      if (why.isPresent()) {
        return Optional.of(new Conflict(e, why.get()));
      }
    }
    return Optional.empty();
  }

  /** Whether claims {@code a} and {@code b} together break {@code mode}'s rule; in words. */
  private static Optional<String> violates(VolumeAccessMode mode, ClusterClaim a, ClusterClaim b) {
    if (!mode.multiNode() && !a.nodeId().equals(b.nodeId())) {
      return Optional.of(mode + " keeps the volume on one node, and it is claimed on node " + b.nodeId());
    }
    if (!mode.writable() && (a.writer() || b.writer())) {
      return Optional.of(mode + " allows readers only");
    }
    if (mode.singleWriter() && a.writer() && b.writer()) {
      return Optional.of(mode + " allows one writer, and " + b.holder() + " writes");
    }
    return Optional.empty();
  }
}
