package dev.csisupervisor.catalog;

import dev.csisupervisor.common.Bounds;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Cluster volumes in etcd, beside the catalog: volumes, claims, attachments and the controller election per
 * plugin id (DESIGN.md "Cluster volumes").
 *
 * <p><b>Claims</b> are taken by reading every claim of the volume and its claim guard, then writing the new claim
 * and the guard only if the guard is unchanged (every claim puts it), so of two concurrent single-writer claims
 * exactly one wins, on any node; each node's claims are under its own prefix ({@link EtcdRoles}). A claim is not on any
 * lease: it goes only when released.
 *
 * <p><b>Attachments</b> are written by the agent holding the plugin id's election key ({@link #lead}), every
 * write conditional on that key being still its own, so a deposed controller agent can write nothing.
 *
 * <p><b>Create and delete requests</b> ({@link ClusterVolumeRequest}) are desired state: whoever asks writes one
 * ({@link #requestCreate}, {@link #requestDelete}); the controller agent writes its attempts and outcome into it
 * ({@link #updateRequest}, {@link #completeCreate}, {@link #completeDelete}), each write conditional on its
 * election key and on the request being as it read it. A delete is asked only while the volume has no claim and
 * no attachment, and no claim is granted while it is asked.
 *
 * <p>Every call goes to etcd (linearizable) and fails with {@link EtcdException} when no member answers (each
 * endpoint is tried once); except, while {@link #watchChanges} is open, {@link #read} and the election's check of
 * who leads, which read a watch-fed mirror of etcd (exact up to its revision; every write stays conditional).
 * Thread-safe.
 */
public interface ClusterVolumes extends VolumeClaims, ControllerAttachments, ProvisioningRequests, ControllerReadings,
    AutoCloseable {

  static Builder builder() {
    return new Builder();
  }

  /** Everything at one revision (from the mirror while {@link #watchChanges} is open and in sync). */
  VolumesSnapshot read();

  /** Unary etcd requests this client has made (streams, keep-alives and watches, are not counted). */
  long etcdRequests();

  /**
   * Mirrors the keys {@link #read} returns from one list and a watch ({@code VolumesInformer}) and calls
   * {@code changed} (on an etcd client thread; it must return at once) after each change is in the mirror: the
   * controller agent's rounds then read the mirror, making no etcd request while nothing changes. A change made while
   * etcd is unreachable is hinted once, after the mirror is listed again. Until the returned handle is closed.
   */
  AutoCloseable watchChanges(Runnable changed);

  /** Stops keeping the election lease alive and revokes it. Idempotent. */
  @Override
  void close();


  /** Builds {@link ClusterVolumes}. Not thread-safe. */
  final class Builder extends EtcdClientSettings<Builder> {
    String nodeId;
    Duration leaseTtl = Duration.ofSeconds(10);
    Clock clock = Clock.systemUTC();

    Builder() {}

    @Override
    Builder self() {
      return this;
    }

    /** Required: this agent's node id (the writer of claims it takes and of attachments it leads for). */
    public Builder nodeId(String nodeId) {
      this.nodeId = CatalogKeys.checkNodeId(nodeId);
      return this;
    }

    /** The election lease's TTL: how long a dead controller agent holds its plugin ids (default 10 s, at least 2 s). */
    public Builder leaseTtl(Duration ttl) {
      Objects.requireNonNull(ttl, "leaseTtl");
      Bounds.notBelow(ttl, "leaseTtl", Duration.ofSeconds(2), "2 s");
      this.leaseTtl = ttl;
      return this;
    }

    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /** @throws IllegalStateException if etcd or the node id is not set */
    public ClusterVolumes build() {
      if (etcd == null || nodeId == null) {
        throw new IllegalStateException("etcd and nodeId are required");
      }
      return new EtcdClusterVolumes(this);
    }
  }
}
