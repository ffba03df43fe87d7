package dev.csisupervisor.volumes;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The cluster's part of a mount, for an agent in a cluster (the agent implements it with etcd; this module knows
 * nothing of etcd). {@link VolumeManager#mount} calls {@link #acquire} before anything else, and
 * {@link #released} once the allocation no longer holds the volume on this node (unmounted, rolled back, or its
 * mount failed before any step), after that is committed: a claim gone means unmounted here.
 *
 * <p>Implementations are thread-safe and never block the caller.
 */
public interface ClusterClaims {
  /** No cluster: every mount as on a lone node. */
  ClusterClaims NONE = new ClusterClaims() {
    @Override
    public CompletableFuture<Optional<Map<String, String>>> acquire(VolumeClaim claim) {
      return CompletableFuture.completedFuture(Optional.empty());
    }

    @Override
    public void released(String pluginId, String volumeId, String allocId) {}
  };

  /**
   * Takes the claim cluster-wide and, where a controller must publish the volume to this node, waits until it
   * has.
   *
   * @return empty when the agent is in no cluster (the manager makes the controller publish itself, as on a lone
   *     node); else the publish context to stage and publish with (empty if the plugin has no controller
   *     publish), and the manager makes no controller call of its own
   * @throws java.util.concurrent.CompletionException (through the future) whose message says why the claim was
   *     refused (naming the holder) or why the cluster cannot be asked now
   */
  CompletableFuture<Optional<Map<String, String>>> acquire(VolumeClaim claim);

  /**
   * Whether the allocation's claim still stands, asked before a lost mount is done again (after a reboot, say): a
   * claim that is gone (fenced, or forced by an operator) means the volume may be another node's now, and the mount
   * is not done again. True when it cannot be told (no cluster, etcd unreachable): the node keeps its mounts.
   */
  default CompletableFuture<Boolean> stillClaimed(String pluginId, String volumeId, String allocId) {
    return CompletableFuture.completedFuture(true);
  }

  /**
   * The allocation no longer holds the volume on this node: its claim is released (now, or once the cluster can
   * be reached again). Idempotent: a failed mount's rollback may tell it twice. Never throws.
   */
  void released(String pluginId, String volumeId, String allocId);
}
