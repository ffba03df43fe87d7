package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.absent;
import static dev.csisupervisor.catalog.EtcdOps.bytes;
import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.modIs;
import static dev.csisupervisor.catalog.EtcdOps.none;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;
import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Create and delete requests in etcd ({@link ClusterVolumeRequest}): whoever asks writes one; the elected controller
 * agent writes its attempts and outcome into it, each write conditional on its election key ({@link
 * EtcdAttachments#held}) and on the request being as it read it. A delete is asked only while the volume has no claim
 * (read through its claim guard, compared unchanged) and no attachment; from then on no claim of it is granted.
 * Thread-safe.
 */
final class EtcdRequests {
  private static final Logger log = LoggerFactory.getLogger(EtcdRequests.class);

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final EtcdClaims claimStore;
  private final EtcdAttachments attachments;

  private final EtcdVolumeOperations operations;

  EtcdRequests(EtcdOps ops, EtcdClaims claims, EtcdAttachments attachments, EtcdVolumeOperations operations) {
    this.operations = operations;
    this.ops = ops;
    this.keys = ops.keys;
    this.claimStore = claims;
    this.attachments = attachments;
  }

  private TxnResponse txn(TxnRequest t) {
    return ops.txn(t);
  }

  List<CatalogEntry> controllersOf(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    String prefix = keys.pluginEntriesPrefix(dev.csisupervisor.registry.PluginType.CSI_CONTROLLER, pluginId);
    TxnResponse r = txn(TxnRequest.newBuilder().addSuccess(rangePrefix(prefix, 0)).build());
    List<CatalogEntry> out = new ArrayList<>();
    for (KeyValue kv : r.getResponses(0).getResponseRange().getKvsList()) {
      EtcdOps.decodeOrSkip(kv, () -> out.add(CatalogCodec.decodeEntry(kv.getValue())));
    }
    return out;
  }

  ClusterVolumeRequest requestCreate(ClusterVolumeRequest request) throws VolumeStateException {
    if (request.kind() != ClusterVolumeRequest.Kind.CREATE || request.state() != ClusterVolumeRequest.State.PENDING) {
      throw new IllegalArgumentException("request must be a new create, got " + request.kind() + " " + request.state());
    }
    return operations.ask(request);
  }

  /** Puts {@code request} over the key if its mod revision is still {@code revision}. */
  boolean replace(String key, long revision, ClusterVolumeRequest request) {
    return txn(TxnRequest.newBuilder().addCompare(modIs(key, revision))
        .addSuccess(put(key, VolumeCodec.encode(request), 0)).build()).getSucceeded();
  }

  Optional<ClusterVolumeRequest> requestDelete(ClusterVolumeRequest request) throws VolumeStateException {
    if (request.kind() != ClusterVolumeRequest.Kind.DELETE || request.state() != ClusterVolumeRequest.State.PENDING) {
      throw new IllegalArgumentException("request must be a new delete, got " + request.kind() + " " + request.state());
    }
    String plugin = request.pluginId();
    String volumeId = request.name();
    String key = keys.requestKey(request.kind(), plugin, volumeId);
    String volumeKey = keys.volumeKey(plugin, volumeId);
    String guard = keys.claimGuardKey(plugin, volumeId);
    String attachments = keys.volumeAttachmentsPrefix(plugin, volumeId);
    String snapshots = keys.requestsPrefix(ClusterVolumeRequest.Kind.SNAPSHOT, plugin);
    String clones = keys.requestsPrefix(ClusterVolumeRequest.Kind.CREATE, plugin);
    for (int round = 1; round <= EtcdClaims.MAX_CLAIM_ROUNDS; round++) {
      TxnResponse read = txn(TxnRequest.newBuilder().addSuccess(range(volumeKey))
          .addSuccess(range(guard)).addSuccess(rangePrefix(attachments, 10)).addSuccess(range(key))
          .addSuccess(rangePrefix(snapshots, 0)).addSuccess(rangePrefix(clones, 0)).build());
      if (read.getResponses(0).getResponseRange().getKvsCount() == 0) {
        return Optional.empty();
      }
      Optional<EtcdClaims.Guarded> claims = claimStore.guarded(read, 1, guard);
      if (claims.isEmpty()) {
        continue;
      }
      List<String> held = new ArrayList<>();
      for (KeyValue kv : claims.get().claims()) {
        held.add(describeOrKey(kv, () -> {
          ClusterClaim c = claimStore.decodeClaim(kv);
          return "claim by " + c.holder() + " (" + c.mode() + ")";
        }));
      }
      for (KeyValue kv : read.getResponses(2).getResponseRange().getKvsList()) {
        held.add(describeOrKey(kv, () -> {
          ClusterAttachment a = VolumeCodec.decodeAttachment(kv.getValue());
          return "attachment to node " + a.nodeId() + " (" + a.state() + ")";
        }));
      }
      List<String> cutting = operations.pendingFrom(read, 4, volumeId);
      if (!cutting.isEmpty()) {
        throw new VolumeStateException("delete of " + plugin + "/" + volumeId + " refused: a snapshot of it is being "
            + "cut: " + String.join("; ", cutting) + ". Wait for it, or cancel it first");
      }
      List<String> cloning = operations.pendingFrom(read, 5, volumeId);
      if (!cloning.isEmpty()) {
        throw new VolumeStateException("delete of " + plugin + "/" + volumeId + " refused: it is being cloned: "
            + String.join("; ", cloning) + ". Wait for it, or cancel it first");
      }
      if (!held.isEmpty()) {
        throw new VolumeStateException("delete of " + plugin + "/" + volumeId + " refused: the volume is in use: "
            + String.join("; ", held) + (held.size() >= 10 ? " and maybe more" : "") + ". Unmount it everywhere first "
            + "(or detach a lost node with csi-agent cluster volume detach --node N --force)");
      }
      // Only if no claim was written since the read (each one puts the guard) and nothing else changed.
      TxnResponse r = txn(TxnRequest.newBuilder()
          .addCompare(Compare.newBuilder().setKey(bytes(volumeKey)).setTarget(Compare.CompareTarget.CREATE)
              .setResult(Compare.CompareResult.GREATER).setCreateRevision(0))
          .addCompare(modIs(guard, claims.get().guardRevision())).addCompare(none(attachments)).addCompare(absent(key))
          .addCompare(EtcdOps.unchangedSince(snapshots, read.getHeader().getRevision()))
          .addCompare(EtcdOps.unchangedSince(clones, read.getHeader().getRevision()))
          .addSuccess(put(key, VolumeCodec.encode(request), 0)).build());
      if (r.getSucceeded()) {
        log.info("{} asked", request.describe());
        return Optional.of(request.withRevision(r.getHeader().getRevision()));
      }
      List<KeyValue> kvs = read.getResponses(3).getResponseRange().getKvsList();
      if (kvs.isEmpty()) {
        continue; // something else changed: read again
      }
      ClusterVolumeRequest existing = VolumeCodec.decodeRequest(kvs.get(0).getValue(), kvs.get(0).getModRevision());
      if (existing.state() != ClusterVolumeRequest.State.FAILED) {
        return Optional.of(existing);
      }
      if (replace(key, existing.revision(), request)) {
        log.info("{} asked again (it had failed: {})", request.describe(), existing.message());
        return request(request.kind(), plugin, volumeId);
      }
    }
    throw new EtcdException(request.describe() + ": the request kept changing", "CONTENTION", null);
  }

  static String describeOrKey(KeyValue kv, Supplier<String> describe) {
    try {
      return describe.get();
    } catch (IllegalArgumentException e) {
      return kv.getKey().toStringUtf8();
    }
  }

  Optional<ClusterVolumeRequest> request(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    String key = keys.requestKey(kind, pluginId, name);
    var r = ops.call(() -> ops.client.range(RangeRequest.newBuilder().setKey(bytes(key)).build()));
    return r.getKvsCount() == 0 ? Optional.empty()
        : Optional.of(VolumeCodec.decodeRequest(r.getKvs(0).getValue(), r.getKvs(0).getModRevision()));
  }

  boolean withdraw(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    for (int round = 1; round <= EtcdClaims.MAX_CLAIM_ROUNDS; round++) {
      Optional<ClusterVolumeRequest> r = request(kind, pluginId, name);
      if (r.isEmpty() || r.get().state() == ClusterVolumeRequest.State.DONE) {
        return false;
      }
      String key = keys.requestKey(kind, pluginId, name);
      if (r.get().state() == ClusterVolumeRequest.State.CANCELLED) {
        return true; // cancelled already: its controller agent is undoing it
      }
      if (r.get().mayHaveMade()) {
        // Sent: the plugin may have made it. Kept, as cancelled, for the controller agent to learn by name what it
        // made and delete it (a key deleted now would leave that volume or snapshot with no record naming it).
        if (txn(TxnRequest.newBuilder().addCompare(modIs(key, r.get().revision()))
            .addSuccess(put(key, VolumeCodec.encode(r.get().cancelled()), 0)).build()).getSucceeded()) {
          log.info("{} cancelled after it was sent: its controller agent deletes what it made", r.get().describe());
          return true;
        }
        continue;
      }
      if (txn(TxnRequest.newBuilder().addCompare(modIs(key, r.get().revision())).addSuccess(delete(key)).build())
          .getSucceeded()) {
        log.info("{} withdrawn ({})", r.get().describe(), r.get().state());
        return true;
      }
    }
    throw new EtcdException("withdraw of " + pluginId + "/" + name + ": the request kept changing", "CONTENTION", null);
  }

  Optional<ClusterVolumeRequest> updateRequest(ClusterVolumes.Leadership l, ClusterVolumeRequest from, ClusterVolumeRequest to) {
    String key = keys.requestKey(from.kind(), from.pluginId(), from.name());
    TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(attachments.held(l)).addCompare(modIs(key, from.revision()));
    if (from.kind() == ClusterVolumeRequest.Kind.DELETE) {
      // No claim can be written while the delete request exists (a claim's transaction compares it absent), and
      // there was none when it was made (requestDelete); attachments are the controller agent's own.
      t.addCompare(none(keys.volumeAttachmentsPrefix(from.pluginId(), from.name())));
    }
    TxnResponse r = txn(t.addSuccess(put(key, VolumeCodec.encode(to), 0)).build());
    return r.getSucceeded() ? Optional.of(to.withRevision(r.getHeader().getRevision())) : Optional.empty();
  }

  boolean completeCreate(ClusterVolumes.Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    String volumeKey = keys.volumeKey(volume.pluginId(), volume.volumeId());
    ByteString done = VolumeCodec.encode(request.done(volume.volumeId()));
    TxnResponse r = txn(TxnRequest.newBuilder().addCompare(attachments.held(l)).addCompare(modIs(key, request.revision()))
        .addCompare(absent(volumeKey))
        .addSuccess(put(volumeKey, VolumeCodec.encode(volume), 0)).addSuccess(put(key, done, 0))
        .addFailure(range(volumeKey)).build());
    if (r.getSucceeded()) {
      log.info("{} done: volume {} registered", request.describe(), volume.volumeId());
      return true;
    }
    List<KeyValue> existing = r.getResponses(0).getResponseRange().getKvsList();
    if (existing.isEmpty()) {
      return false; // the leadership or the request changed
    }
    ClusterVolume there = VolumeCodec.decodeVolume(existing.get(0).getValue());
    if (!there.equals(volume)) {
      throw new VolumeStateException(request.describe() + ": CreateVolume answered volume " + volume.volumeId()
          + ", which is registered already with other content (" + there + ")");
    }
    return txn(TxnRequest.newBuilder().addCompare(attachments.held(l)).addCompare(modIs(key, request.revision()))
        .addSuccess(put(key, done, 0)).build()).getSucceeded();
  }

  boolean completeDelete(ClusterVolumes.Leadership l, ClusterVolumeRequest request) {
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(attachments.held(l)).addCompare(modIs(key, request.revision()))
        .addSuccess(delete(keys.volumeKey(request.pluginId(), request.name()))).addSuccess(delete(key))
        .addSuccess(delete(keys.claimGuardKey(request.pluginId(), request.name())))
        .addSuccess(delete(keys.requestKey(ClusterVolumeRequest.Kind.MODIFY, request.pluginId(), request.name())))
        .addSuccess(delete(keys.requestKey(ClusterVolumeRequest.Kind.REGISTER, request.pluginId(), request.name())));
    operations.doneRequestsMaking(ClusterVolumeRequest.Kind.CREATE, request.pluginId(), request.name())
        .forEach(k -> t.addSuccess(delete(k)));
    boolean done = txn(t.build()).getSucceeded();
    if (done) {
      log.info("{} done: the volume's key removed", request.describe());
    }
    return done;
  }

}
