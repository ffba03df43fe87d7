package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.bytes;
import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.modIs;
import static dev.csisupervisor.catalog.EtcdOps.none;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;
import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A cluster volume's own key: registered only if absent (the same content again is a no-op, other content is
 * refused), deregistered only while nothing holds the volume, in a transaction that compares the claim guard as read
 * ({@link EtcdClaims#guarded}) and that no attachment appeared. Thread-safe.
 */
record EtcdVolumeRegistrations(EtcdOps ops, EtcdClaims claimStore) {
  private static final Logger log = LoggerFactory.getLogger(EtcdVolumeRegistrations.class);

  /** See {@link VolumeClaims#register}. */
  boolean register(ClusterVolume volume) throws VolumeStateException {
    String key = ops.keys.volumeKey(volume.pluginId(), volume.volumeId());
    ByteString value = VolumeCodec.encode(volume);
    TxnResponse r = ops.txn(TxnRequest.newBuilder()
        .addCompare(Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.CREATE)
            .setResult(Compare.CompareResult.EQUAL).setCreateRevision(0))
        .addSuccess(put(key, value, 0)).addFailure(range(key)).build());
    if (r.getSucceeded()) {
      log.info("cluster volume {}/{} registered", volume.pluginId(), volume.volumeId());
      return true;
    }
    ClusterVolume existing = VolumeCodec.decodeVolume(r.getResponses(0).getResponseRange().getKvs(0).getValue());
    if (existing.equals(volume)) {
      return false;
    }
    throw new VolumeStateException("volume " + volume.volumeId() + " of plugin " + volume.pluginId()
        + " is registered already with other content (" + existing + "); deregister it first");
  }

  /** See {@link VolumeClaims#deregister}. */
  boolean deregister(String pluginId, String volumeId) throws VolumeStateException {
    String key = ops.keys.volumeKey(pluginId, volumeId);
    String guard = ops.keys.claimGuardKey(pluginId, volumeId);
    String attachments = ops.keys.volumeAttachmentsPrefix(pluginId, volumeId);
    for (int round = 1; round <= EtcdClaims.MAX_CLAIM_ROUNDS; round++) {
      TxnResponse read = ops.txn(TxnRequest.newBuilder().addSuccess(range(guard))
          .addSuccess(rangePrefix(attachments, 1)).build());
      Optional<EtcdClaims.Guarded> claims = claimStore.guarded(read, 0, guard);
      if (claims.isEmpty()) {
        continue;
      }
      List<String> held = new ArrayList<>();
      claims.get().claims().forEach(kv -> held.add("claim " + kv.getKey().toStringUtf8()));
      read.getResponses(1).getResponseRange().getKvsList()
          .forEach(kv -> held.add("attachment " + kv.getKey().toStringUtf8()));
      if (!held.isEmpty()) {
        throw new VolumeStateException("volume " + volumeId + " of plugin " + pluginId + " is still in use (" + held
            + (held.size() == 1 ? "" : " and more") + "): unmount it everywhere first, or detach a lost node with "
            + "csi-agent cluster volume detach --node N --force");
      }
      // Only if no claim was written since the read (each one puts the guard) and no attachment appeared.
      TxnResponse r = ops.txn(TxnRequest.newBuilder().addCompare(modIs(guard, claims.get().guardRevision()))
          .addCompare(none(attachments)).addSuccess(delete(key)).addSuccess(delete(guard)).build());
      if (r.getSucceeded()) {
        boolean existed = r.getResponses(0).getResponseDeleteRange().getDeleted() > 0;
        if (existed) {
          log.info("cluster volume {}/{} deregistered", pluginId, volumeId);
        }
        return existed;
      }
    }
    throw new EtcdException("deregister of " + pluginId + "/" + volumeId + ": its claims kept changing", "CONTENTION",
        null);
  }
}
