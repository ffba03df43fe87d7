package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.bytes;
import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;

import dev.csisupervisor.catalog.ControllerElection.Leadership;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The election of {@link ControllerElection} on etcd: the campaign for a plugin id's election key (put on this
 * agent's {@link ElectionLease} only if the key is absent; kept if it is on our lease already), the resignation
 * (deleted only while it is still the key we took), and the lease, which this class owns and closes. While the
 * watch-fed mirror is in sync, who holds the key is read from it ({@link VolumesReads#mirrored}). Thread-safe.
 */
final class EtcdElection implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(EtcdElection.class);

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final VolumesReads reads;
  private final EtcdAttachments attachments;
  private final ElectionLease lease;
  private final String nodeId;
  private final Clock clock;

  EtcdElection(EtcdOps ops, VolumesReads reads, EtcdAttachments attachments, String nodeId, Clock clock,
      long leaseTtlSeconds) {
    this.ops = ops;
    this.keys = ops.keys;
    this.reads = reads;
    this.attachments = attachments;
    this.lease = new ElectionLease(ops, nodeId, leaseTtlSeconds);
    this.nodeId = nodeId;
    this.clock = clock;
  }

  /** See {@link ControllerElection#lead}. */
  Optional<Leadership> lead(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    String key = keys.controllerKey(pluginId);
    Optional<KeyValue> mirrored = reads.mirrored(key).orElse(Optional.empty());
    if (mirrored.isPresent()) {
      // Held: by this agent's live lease (leading still) or by another's (nothing to ask etcd until the key goes).
      long held = mirrored.get().getLease();
      long ours = lease.current();
      return held == ours && ours != 0
          ? Optional.of(new Leadership(pluginId, nodeId, mirrored.get().getCreateRevision(), ours))
          : Optional.empty();
    }
    long ours = lease.get();
    TxnResponse r = ops.txn(TxnRequest.newBuilder()
        .addCompare(Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.CREATE)
            .setResult(Compare.CompareResult.EQUAL).setCreateRevision(0))
        .addSuccess(put(key, VolumeCodec.encodeController(nodeId, clock.instant()), ours))
        .addFailure(range(key)).build());
    if (r.getSucceeded()) {
      log.info("node {} is now the controller agent of plugin {}", nodeId, pluginId);
      return Optional.of(new Leadership(pluginId, nodeId, r.getHeader().getRevision(), ours));
    }
    List<KeyValue> kvs = r.getResponses(0).getResponseRange().getKvsList();
    if (!kvs.isEmpty() && kvs.get(0).getLease() == ours) {
      return Optional.of(new Leadership(pluginId, nodeId, kvs.get(0).getCreateRevision(), ours));
    }
    return Optional.empty();
  }

  /** Deletes the election key, only while it is still the one {@code l} took. */
  void resign(Leadership l) {
    ops.txn(TxnRequest.newBuilder().addCompare(attachments.held(l)).addSuccess(delete(keys.controllerKey(l.pluginId())))
        .build());
  }

  /** See {@link ControllerElection#leadershipLeft}. */
  Duration left(Leadership l) {
    return lease.left(l.leaseId());
  }

  /** See {@link ControllerElection#onLeaseLost}. */
  void onLeaseLost(Runnable lost) {
    lease.onLost(lost);
  }

  /** Stops keeping the lease alive and revokes it (its election keys go at once). Idempotent. */
  @Override
  public void close() {
    lease.close();
  }
}
