package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.put;

import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator's detach of a node: the {@link DetachOrder} its controller agents act on (written, withdrawn), and the
 * force, which deletes the node's claims, attachments and unreadable keys as a snapshot lists them, without any
 * unpublish, in transactions of at most {@link EtcdOps#MAX_TXN_OPS}. Thread-safe.
 */
record EtcdNodeDetach(EtcdOps ops, VolumesReads reads) {
  private static final Logger log = LoggerFactory.getLogger(EtcdNodeDetach.class);

  /** See {@link VolumeClaims#orderDetach}. */
  void orderDetach(DetachOrder order) {
    String key = ops.keys.detachOrderKey(order.nodeId());
    ops.txn(TxnRequest.newBuilder().addSuccess(put(key, VolumeCodec.encode(order), 0)).build());
    log.warn("cluster volumes: detach of node {} ordered ({})", order.nodeId(), order);
  }

  /** See {@link VolumeClaims#withdrawDetach}. */
  boolean withdrawDetach(String nodeId) {
    String key = ops.keys.detachOrderKey(nodeId);
    return ops.txn(TxnRequest.newBuilder().addSuccess(delete(key)).build()).getResponses(0).getResponseDeleteRange()
        .getDeleted() > 0;
  }

  /** See {@link VolumeClaims#forceDetach}. */
  List<ClusterClaim> forceDetach(String nodeId, Optional<String> pluginId, Optional<String> volumeId) {
    CatalogKeys.checkNodeId(nodeId);
    VolumesSnapshot s = reads.read();
    List<ClusterClaim> gone = new ArrayList<>();
    List<RequestOp> deletes = new ArrayList<>();
    for (ClusterClaim c : s.claims()) {
      if (c.nodeId().equals(nodeId) && pluginId.map(c.pluginId()::equals).orElse(true)
          && volumeId.map(c.volumeId()::equals).orElse(true)) {
        gone.add(c);
        deletes.add(delete(ops.keys.claimKey(c.pluginId(), c.volumeId(), c.nodeId(), c.allocId())));
      }
    }
    for (ClusterAttachment a : s.attachments()) {
      if (a.nodeId().equals(nodeId) && pluginId.map(a.pluginId()::equals).orElse(true)
          && volumeId.map(a.volumeId()::equals).orElse(true)) {
        deletes.add(delete(ops.keys.attachmentKey(a.pluginId(), a.volumeId(), a.nodeId())));
      }
    }
    for (VolumesSnapshot.DamagedKey d : s.damaged()) {
      if (d.nodeId().equals(nodeId) && pluginId.map(d.pluginId()::equals).orElse(true)
          && volumeId.map(d.volumeId()::equals).orElse(true)) {
        log.warn("FORCED: unreadable key {} of node {} deleted ({})", d.key(), nodeId, d.why());
        deletes.add(delete(d.key()));
      }
    }
    for (int i = 0; i < deletes.size(); i += EtcdOps.MAX_TXN_OPS) {
      List<RequestOp> part = deletes.subList(i, Math.min(deletes.size(), i + EtcdOps.MAX_TXN_OPS));
      ops.txn(TxnRequest.newBuilder().addAllSuccess(part).build());
    }
    log.warn("FORCED: {} claim(s) of node {} deleted without any controller unpublish: {}", gone.size(), nodeId,
        gone.stream().map(c -> c.pluginId() + "/" + c.volumeId() + "/" + c.allocId()).toList());
    return gone;
  }
}
