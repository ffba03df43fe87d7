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
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link ClusterVolumes} on the project's etcd client, one collaborator per seam: claims and their guards
 * ({@link EtcdClaims}, the node side), create and delete requests ({@link EtcdRequests}), the controller agent's
 * attachments and fences ({@link EtcdAttachments}), its election lease ({@link ElectionLease}), and the snapshot a
 * controller round reads, from etcd or the watch-fed mirror ({@link VolumesReads}). Here: the volumes' own keys, the
 * operator's detach, the election's campaign, and the delegation.
 */
final class EtcdClusterVolumes implements ClusterVolumes {
  private static final Logger log = LoggerFactory.getLogger(EtcdClusterVolumes.class);

  private final EtcdClient client;
  private final CatalogKeys keys;
  private final EtcdOps ops;
  private final EtcdAttachments attachmentWrites;
  private final EtcdClaims claimStore;
  private final EtcdRequests requests;
  private final EtcdVolumeOperations operations;
  private final ElectionLease lease;
  private final String nodeId;
  private final Clock clock;
  /** The watch-fed mirror while {@link #watchChanges} is open. */
  private final VolumesReads reads;
  /** The controller agent's readings: conditions, leaks, capacity. */
  private final EtcdControllerReadings readings;

  EtcdClusterVolumes(ClusterVolumes.Builder b) {
    this.client = b.newClient();
    this.keys = b.keys;
    this.ops = new EtcdOps(client, keys);
    this.attachmentWrites = new EtcdAttachments(ops, b.nodeId, b.clock);
    this.claimStore = new EtcdClaims(ops, b.clock);
    this.operations = new EtcdVolumeOperations(ops, attachmentWrites);
    this.requests = new EtcdRequests(ops, claimStore, attachmentWrites, operations);
    this.reads = new VolumesReads(ops, claimStore);
    this.nodeId = b.nodeId;
    this.lease = new ElectionLease(ops, b.nodeId, b.leaseTtl.toSeconds());
    this.clock = b.clock;
    this.readings = new EtcdControllerReadings(ops, attachmentWrites);
  }

  private <T> T call(Supplier<T> op) {
    return ops.call(op);
  }

  private TxnResponse txn(TxnRequest t) {
    return ops.txn(t);
  }

  // ---- volumes ----

  @Override
  public boolean register(ClusterVolume volume) throws VolumeStateException {
    String key = keys.volumeKey(volume.pluginId(), volume.volumeId());
    ByteString value = VolumeCodec.encode(volume);
    TxnResponse r = txn(TxnRequest.newBuilder()
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

  @Override
  public boolean deregister(String pluginId, String volumeId) throws VolumeStateException {
    String key = keys.volumeKey(pluginId, volumeId);
    String guard = keys.claimGuardKey(pluginId, volumeId);
    String attachments = keys.volumeAttachmentsPrefix(pluginId, volumeId);
    for (int round = 1; round <= EtcdClaims.MAX_CLAIM_ROUNDS; round++) {
      TxnResponse read = txn(TxnRequest.newBuilder().addSuccess(range(guard))
          .addSuccess(rangePrefix(attachments, 1)).build());
      Optional<EtcdClaims.Guarded> claims = claimStore.guarded(read, 0, guard);
      if (claims.isEmpty()) {
        continue;
      }
      List<String> held = new ArrayList<>();
      claims.get().claims().forEach(kv -> held.add("claim " + kv.getKey().toStringUtf8()));
      read.getResponses(1).getResponseRange().getKvsList().forEach(kv -> held.add("attachment " + kv.getKey().toStringUtf8()));
      if (!held.isEmpty()) {
        throw new VolumeStateException("volume " + volumeId + " of plugin " + pluginId + " is still in use (" + held
            + (held.size() == 1 ? "" : " and more") + "): unmount it everywhere first, or detach a lost node with "
            + "csi-agent cluster volume detach --node N --force");
      }
      // Only if no claim was written since the read (each one puts the guard) and no attachment appeared.
      TxnResponse r = txn(TxnRequest.newBuilder().addCompare(modIs(guard, claims.get().guardRevision()))
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

  @Override
  public Optional<ClusterVolume> volume(String pluginId, String volumeId) {
    return ops.volume(pluginId, volumeId);
  }

  // ---- claims ----

  @Override
  public void orderDetach(DetachOrder order) {
    String key = keys.detachOrderKey(order.nodeId());
    txn(TxnRequest.newBuilder().addSuccess(put(key, VolumeCodec.encode(order), 0)).build());
    log.warn("cluster volumes: detach of node {} ordered ({})", order.nodeId(), order);
  }

  @Override
  public boolean withdrawDetach(String nodeId) {
    String key = keys.detachOrderKey(nodeId);
    return txn(TxnRequest.newBuilder().addSuccess(delete(key)).build()).getResponses(0).getResponseDeleteRange()
        .getDeleted() > 0;
  }

  @Override
  public List<ClusterClaim> forceDetach(String nodeId, Optional<String> pluginId, Optional<String> volumeId) {
    CatalogKeys.checkNodeId(nodeId);
    VolumesSnapshot s = read();
    List<ClusterClaim> gone = new ArrayList<>();
    List<RequestOp> ops = new ArrayList<>();
    for (ClusterClaim c : s.claims()) {
      if (c.nodeId().equals(nodeId) && pluginId.map(c.pluginId()::equals).orElse(true)
          && volumeId.map(c.volumeId()::equals).orElse(true)) {
        gone.add(c);
        ops.add(delete(keys.claimKey(c.pluginId(), c.volumeId(), c.nodeId(), c.allocId())));
      }
    }
    for (ClusterAttachment a : s.attachments()) {
      if (a.nodeId().equals(nodeId) && pluginId.map(a.pluginId()::equals).orElse(true)
          && volumeId.map(a.volumeId()::equals).orElse(true)) {
        ops.add(delete(keys.attachmentKey(a.pluginId(), a.volumeId(), a.nodeId())));
      }
    }
    for (VolumesSnapshot.DamagedKey d : s.damaged()) {
      if (d.nodeId().equals(nodeId) && pluginId.map(d.pluginId()::equals).orElse(true)
          && volumeId.map(d.volumeId()::equals).orElse(true)) {
        log.warn("FORCED: unreadable key {} of node {} deleted ({})", d.key(), nodeId, d.why());
        ops.add(delete(d.key()));
      }
    }
    for (int i = 0; i < ops.size(); i += EtcdOps.MAX_TXN_OPS) {
      txn(TxnRequest.newBuilder().addAllSuccess(ops.subList(i, Math.min(ops.size(), i + EtcdOps.MAX_TXN_OPS))).build());
    }
    log.warn("FORCED: {} claim(s) of node {} deleted without any controller unpublish: {}", gone.size(), nodeId,
        gone.stream().map(c -> c.pluginId() + "/" + c.volumeId() + "/" + c.allocId()).toList());
    return gone;
  }

  // ---- attachments and the election ----

  @Override
  public Optional<ClusterAttachment> attachment(String pluginId, String volumeId, String nodeId) {
    String key = keys.attachmentKey(pluginId, volumeId, nodeId);
    var r = call(() -> client.range(RangeRequest.newBuilder().setKey(bytes(key)).build()));
    if (r.getKvsCount() == 0) {
      return Optional.empty();
    }
    try {
      return Optional.of(reads.attachmentAtItsKey(r.getKvs(0)));
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("the attachment key " + key + " does not read (" + e.getMessage() + "); "
          + "csi-agent cluster volume detach --node " + nodeId + " --force removes it", e);
    }
  }

  @Override
  public boolean controllerPublishes(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    Optional<KeyValue> mirroredCaps = reads.mirrored(keys.capabilitiesKey(pluginId)).orElse(Optional.empty());
    if (mirroredCaps.isPresent()) {
      return VolumeCodec.decodeCapabilities(mirroredCaps.get().getValue()).contains("PUBLISH_UNPUBLISH_VOLUME");
    }
    Optional<java.util.Set<String>> remembered = attachmentWrites.rememberedCapabilities(pluginId);
    if (remembered.isPresent()) {
      return remembered.get().contains("PUBLISH_UNPUBLISH_VOLUME");
    }
    String prefix = keys.pluginEntriesPrefix(dev.csisupervisor.registry.PluginType.CSI_CONTROLLER, pluginId);
    TxnResponse r = txn(TxnRequest.newBuilder().addSuccess(rangePrefix(prefix, 0)).build());
    for (KeyValue kv : r.getResponses(0).getResponseRange().getKvsList()) {
      try {
        if (CatalogCodec.decodeEntry(kv.getValue()).controllerCapabilities().contains("PUBLISH_UNPUBLISH_VOLUME")) {
          return true;
        }
      } catch (IllegalArgumentException e) {
        log.warn("cluster volumes: skipping {}: {}", kv.getKey().toStringUtf8(), e.getMessage());
      }
    }
    return false;
  }

  /** Why {@code decode} failed, logged once per read; empty if it did not. */

  @Override
  public Optional<Leadership> lead(String pluginId) {
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
    TxnResponse r = txn(TxnRequest.newBuilder()
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

  @Override
  public void resign(Leadership l) {
    txn(TxnRequest.newBuilder().addCompare(held(l)).addSuccess(delete(keys.controllerKey(l.pluginId()))).build());
  }

  @Override
  public Duration leadershipLeft(Leadership l) {
    return lease.left(l.leaseId());
  }

  @Override
  public void onLeaseLost(Runnable lost) {
    lease.onLost(lost);
  }

  @Override
  public Optional<ClusterAttachment> intendAttach(Leadership l, ClusterAttachment attaching) {
    return attachmentWrites.intend(l, attaching);
  }

  @Override
  public Optional<ClusterAttachment> updateAttachment(Leadership l, ClusterAttachment from, ClusterAttachment to) {
    return attachmentWrites.update(l, from, to);
  }

  @Override
  public Optional<ClusterAttachment> markDetaching(Leadership l, ClusterAttachment a) {
    return attachmentWrites.markDetaching(l, a);
  }

  @Override
  public boolean deleteAttachment(Leadership l, ClusterAttachment a) {
    return attachmentWrites.delete(l, a);
  }

  @Override
  public Optional<ClusterAttachment> beginFence(Leadership l, ClusterAttachment a, boolean ordered) {
    return attachmentWrites.beginFence(l, a, ordered);
  }

  @Override
  public boolean completeFence(Leadership l, String pluginId, String volumeId, String node,
      Optional<ClusterAttachment> a, long revision, boolean ordered) {
    return attachmentWrites.completeFence(l, pluginId, volumeId, node, a, revision, ordered);
  }

  @Override
  public void rememberCapabilities(Leadership l, java.util.Set<String> controllerCapabilities) {
    attachmentWrites.rememberCapabilities(l, controllerCapabilities);
  }

  @Override
  public void markStopped() {
    attachmentWrites.markStopped();
  }

  @Override
  public void clearStopped() {
    attachmentWrites.clearStopped();
  }

  /** The election key is still the one {@code l} took. */
  private Compare held(Leadership l) {
    return attachmentWrites.held(l);
  }

  // ---- create and delete requests ----

  // ---- claims (EtcdClaims) ----

  @Override
  public ClusterClaim claim(ClaimRequest request) throws ClaimRefusedException {
    return claimStore.claim(request);
  }

  @Override
  public boolean release(String pluginId, String volumeId, String nodeId, String allocId) {
    return claimStore.release(pluginId, volumeId, nodeId, allocId);
  }

  @Override
  public boolean release(ClusterClaim claim) {
    return claimStore.release(claim);
  }

  @Override
  public List<ClusterClaim> claims(String pluginId, String volumeId) {
    return claimStore.claims(pluginId, volumeId);
  }

  @Override
  public List<ClusterClaim> claimsOfNode(String nodeId) {
    return claimStore.claimsOfNode(nodeId);
  }

  // ---- create and delete requests (EtcdRequests) ----

  @Override
  public List<CatalogEntry> controllersOf(String pluginId) {
    return requests.controllersOf(pluginId);
  }

  @Override
  public ClusterVolumeRequest requestCreate(ClusterVolumeRequest request) throws VolumeStateException {
    return requests.requestCreate(request);
  }

  @Override
  public Optional<ClusterVolumeRequest> requestDelete(ClusterVolumeRequest request) throws VolumeStateException {
    return requests.requestDelete(request);
  }

  @Override
  public Optional<ClusterVolumeRequest> request(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    return requests.request(kind, pluginId, name);
  }

  @Override
  public boolean withdraw(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    return requests.withdraw(kind, pluginId, name);
  }

  @Override
  public Optional<ClusterVolumeRequest> updateRequest(Leadership l, ClusterVolumeRequest from, ClusterVolumeRequest to) {
    return requests.updateRequest(l, from, to);
  }

  @Override
  public boolean completeCreate(Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    return requests.completeCreate(l, request, volume);
  }

  @Override
  public boolean completeDelete(Leadership l, ClusterVolumeRequest request) {
    return requests.completeDelete(l, request);
  }

  @Override
  public VolumesSnapshot read() {
    return reads.read();
  }

  @Override
  public AutoCloseable watchChanges(Runnable changed) {
    return reads.watchChanges(changed);
  }

  /** Whether the watch-fed mirror is open and in sync. */
  boolean mirrorSynced() {
    return reads.mirrorSynced();
  }

  /** Unary etcd requests made by this client (not its streams): what a controller round costs. */
  @Override
  public long etcdRequests() {
    return client.unaryCalls();
  }

  // ---- the controller agent's readings (EtcdControllerReadings) ----

  @Override
  public java.util.Map<String, VolumeCondition> conditions(String pluginId) {
    return readings.conditions(pluginId);
  }

  @Override
  public Optional<ControllerLeaks> leaks(String pluginId) {
    return readings.leaks(pluginId);
  }

  @Override
  public List<CapacityReading> capacity(String pluginId) {
    return readings.capacity(pluginId);
  }

  @Override
  public List<CatalogEntry> nodePluginsOf(String pluginId) {
    return readings.nodePluginsOf(pluginId);
  }

  @Override
  public Set<String> snapshotRecordIds(String pluginId) {
    return readings.snapshotRecordIds(pluginId);
  }

  @Override
  public int writeConditions(Leadership l, String pluginId, java.util.Collection<VolumeCondition> now) {
    return readings.writeConditions(l, pluginId, now);
  }

  @Override
  public int writeLeaks(Leadership l, ControllerLeaks leaks) {
    return readings.writeLeaks(l, leaks);
  }

  @Override
  public int writeCapacity(Leadership l, String pluginId, java.util.Collection<CapacityReading> now) {
    return readings.writeCapacity(l, pluginId, now);
  }

  @Override
  public void close() {
    lease.close();
    client.close();
  }

  @Override
  public ClusterVolumeRequest ask(ClusterVolumeRequest request) throws VolumeStateException {
    return operations.ask(request);
  }

  @Override
  public Optional<ClusterVolumeRequest> requestSnapshotDelete(ClusterVolumeRequest request)
      throws VolumeStateException {
    return operations.requestSnapshotDelete(request);
  }

  @Override
  public Optional<ClusterVolumeSnapshot> snapshot(String pluginId, String snapshotId) {
    return operations.snapshot(pluginId, snapshotId);
  }

  @Override
  public Optional<ClusterVolumeRequest> recordSnapshot(Leadership l, ClusterVolumeRequest request,
      ClusterVolumeSnapshot snapshot, ClusterVolumeRequest to) {
    return operations.recordSnapshot(l, request, snapshot, to);
  }

  @Override
  public boolean completeSnapshotDelete(Leadership l, ClusterVolumeRequest request) {
    return operations.completeSnapshotDelete(l, request);
  }

  @Override
  public boolean completeModify(Leadership l, ClusterVolumeRequest request) {
    return operations.volumeAt(request.pluginId(), request.name())
        .map(v -> operations.completeModify(l, request, v.value().modified(request.spec().mutableParameters()),
            v.revision()))
        .orElse(false);
  }

  @Override
  public boolean completeRegister(Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    return operations.completeRegister(l, request, volume);
  }

  @Override
  public boolean completeCancel(Leadership l, ClusterVolumeRequest request, Optional<String> madeSnapshot) {
    return operations.completeCancel(l, request, madeSnapshot);
  }
}
