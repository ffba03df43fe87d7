package dev.csisupervisor.catalog;

import java.time.Duration;
import java.util.Optional;

/**
 * The election of one controller agent per plugin id: a key on the agent's lease, and how long the agent is sure to
 * hold it (DESIGN.md "One acting controller"). Part of {@link ClusterVolumes}. Thread-safe.
 */
public interface ControllerElection {
  /**
   * Campaigns for the plugin id's election key on this instance's lease ({@link ClusterVolumes.Builder#leaseTtl}): the key is
   * taken if free, kept if already ours.
   *
   * @return the leadership if this node holds the key now
   */
  Optional<Leadership> lead(String pluginId);

  /** Gives the election key up, if it is ours. */
  void resign(Leadership leadership);

  /**
   * How long {@code l} is sure to be held, as far as this agent knows: until its election lease could expire
   * (the send time of the last keep-alive etcd answered, plus the TTL). Zero once the lease is lost. A controller
   * call ends before this (DESIGN.md "One acting controller").
   */
  Duration leadershipLeft(Leadership l);

  /** Calls {@code lost} (on a timer thread; it must return at once) each time the election lease is lost. */
  void onLeaseLost(Runnable lost);

  /**
   * Holding the election key of a plugin id.
   *
   * @param pluginId the plugin id
   * @param nodeId this agent
   * @param createRevision the key's create revision: every write as controller compares it
   * @param leaseId the election lease it is held on
   */
  record Leadership(String pluginId, String nodeId, long createRevision, long leaseId) {}
}
