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
import dev.csisupervisor.catalog.etcdpb.DeleteRangeRequest;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link ClusterVolumes} on the project's etcd client. Each operation is a few transactions; a claim is a read of
 * the volume, its claims (each under its node's own prefix) and its claim guard at one revision, then a put of the
 * claim and the guard conditional on the guard as read, repeated while other claims of the same volume land in
 * between. The election lease is granted on the first {@link #lead} and kept alive from the
 * catalog's shared timer; when it is lost the next {@link #lead} takes a new one.
 */
final class EtcdClusterVolumes implements ClusterVolumes {
  private static final Logger log = LoggerFactory.getLogger(EtcdClusterVolumes.class);
  /** Rounds of read-then-write a claim makes while other claims of the volume keep landing in between. */
  private static final int MAX_CLAIM_ROUNDS = 50;
  /** etcd's default --max-txn-ops. */
  private static final int MAX_TXN_OPS = 128;
  private static final ScheduledExecutorService KEEPALIVE = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "cluster-volumes-keepalive");
    t.setDaemon(true);
    return t;
  });

  private final EtcdClient client;
  private final CatalogKeys keys;
  private final EtcdOps ops;
  private final EtcdAttachments attachmentWrites;
  /** Told when the election lease is lost. */
  private final List<Runnable> leaseLost = new java.util.concurrent.CopyOnWriteArrayList<>();
  /** nanoTime until which the election lease is sure to live (the last answered keep-alive's send time + TTL). */
  private volatile long leaseSureUntil; // guarded by leaseLock for writes
  private final String nodeId;
  private final long ttlSeconds;
  private final Clock clock;
  private final Object leaseLock = new Object();
  /** The watch-fed mirror while {@link #watchChanges} is open. */
  private volatile VolumesInformer informer;
  static final Duration MIRROR_RESYNC = Duration.ofMinutes(5);
  private long leaseId; // guarded by leaseLock
  private LeaseKeepAlive keepAlive; // guarded by leaseLock
  private boolean closed; // guarded by leaseLock

  EtcdClusterVolumes(ClusterVolumes.Builder b) {
    this.client = b.newClient();
    this.keys = b.keys;
    this.ops = new EtcdOps(client, keys);
    this.attachmentWrites = new EtcdAttachments(ops, b.nodeId, b.clock);
    this.nodeId = b.nodeId;
    this.ttlSeconds = b.leaseTtl.toSeconds();
    this.clock = b.clock;
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
    for (int round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      TxnResponse read = txn(TxnRequest.newBuilder().addSuccess(range(guard))
          .addSuccess(rangePrefix(attachments, 1)).build());
      Optional<KeyValue> guardKv = kvAt(read, 0);
      if (guardKv.isEmpty()) {
        makeGuard(guard);
        continue;
      }
      Optional<List<KeyValue>> claims = guardedClaims(guard, guardKv.get());
      if (claims.isEmpty()) {
        continue;
      }
      List<String> held = new ArrayList<>();
      claims.get().forEach(kv -> held.add("claim " + kv.getKey().toStringUtf8()));
      read.getResponses(1).getResponseRange().getKvsList().forEach(kv -> held.add("attachment " + kv.getKey().toStringUtf8()));
      if (!held.isEmpty()) {
        throw new VolumeStateException("volume " + volumeId + " of plugin " + pluginId + " is still in use (" + held
            + (held.size() == 1 ? "" : " and more") + "): unmount it everywhere first, or detach a lost node with "
            + "csi-agent cluster volume detach --node N --force");
      }
      // Only if no claim was written since the read (each one puts the guard) and no attachment appeared.
      TxnResponse r = txn(TxnRequest.newBuilder().addCompare(modIs(guard, guardKv.get().getModRevision()))
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

  /**
   * Puts an absent claim guard. Every decision on a volume's claims compares its guard with a revision read while
   * it existed: a guard deleted behind one's back (a node's user may write the guards) reads as a change, never as
   * the absence first read (which a delete after a claim would bring back).
   */
  private void makeGuard(String guard) {
    txn(TxnRequest.newBuilder().addCompare(absent(guard)).addSuccess(put(guard, ByteString.EMPTY, 0)).build());
  }

  /**
   * The claims of one volume, found through its guard, whose value lists the claim keys written by every claim of
   * the volume since (a claim released or forced away leaves its line until the next claim rewrites the list):
   * each listed key is read, all at the guard's revision, so a claim reads what its volume has, not every claim
   * of the cluster. Empty (the caller reads again) if the guard changed meanwhile.
   */
  private Optional<List<KeyValue>> guardedClaims(String guard, KeyValue guardKv) {
    List<String> listed = listedClaims(guard, guardKv);
    List<KeyValue> claims = new ArrayList<>();
    for (int from = 0; from < listed.size(); from += MAX_TXN_OPS - 1) {
      TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(modIs(guard, guardKv.getModRevision()));
      listed.subList(from, Math.min(listed.size(), from + MAX_TXN_OPS - 1)).forEach(k -> t.addSuccess(range(k)));
      TxnResponse r = txn(t.build());
      if (!r.getSucceeded()) {
        return Optional.empty();
      }
      r.getResponsesList().forEach(op -> claims.addAll(op.getResponseRange().getKvsList()));
    }
    return Optional.of(claims);
  }

  private static List<String> plus(List<String> list, String one) {
    List<String> out = new ArrayList<>(list);
    out.add(one);
    return out;
  }

  /** The claim keys a guard lists (only keys of its own volume's claims). */
  private List<String> listedClaims(String guard, KeyValue guardKv) {
    List<String> out = new ArrayList<>();
    for (String line : guardKv.getValue().toStringUtf8().split("\n")) {
      String key = keys.claimsRoot() + line;
      if (!line.isBlank() && keys.parseClaimKey(key)
          .filter(c -> keys.claimGuardKey(c.pluginId(), c.volumeId()).equals(guard)).isPresent()) {
        out.add(key);
      }
    }
    return out;
  }

  /** A guard's value listing {@code claimKeys} (each relative to the claims root), sorted. */
  private ByteString guardListing(java.util.Collection<String> claimKeys) {
    return ByteString.copyFromUtf8(String.join("\n", new java.util.TreeSet<>(claimKeys.stream()
        .map(k -> k.substring(keys.claimsRoot().length())).toList())));
  }

  /** The guard's kv in the range at {@code index} of {@code r}; empty if it is absent. */
  private static Optional<KeyValue> kvAt(TxnResponse r, int index) {
    List<KeyValue> kvs = r.getResponses(index).getResponseRange().getKvsList();
    return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0));
  }


  @Override
  public Optional<ClusterVolume> volume(String pluginId, String volumeId) {
    String key = keys.volumeKey(pluginId, volumeId);
    var r = call(() -> client.range(RangeRequest.newBuilder().setKey(bytes(key)).build()));
    return r.getKvsCount() == 0 ? Optional.empty() : Optional.of(VolumeCodec.decodeVolume(r.getKvs(0).getValue()));
  }

  // ---- claims ----

  @Override
  public ClusterClaim claim(ClaimRequest request) throws ClaimRefusedException {
    String volumeKey = keys.volumeKey(request.pluginId(), request.volumeId());
    String guard = keys.claimGuardKey(request.pluginId(), request.volumeId());
    String claimKey = keys.claimKey(request.pluginId(), request.volumeId(), request.nodeId(), request.allocId());
    String what = "claim of " + request.pluginId() + "/" + request.volumeId() + " for " + request.nodeId() + "/"
        + request.allocId();
    String deleteKey = keys.requestKey(ClusterVolumeRequest.Kind.DELETE, request.pluginId(), request.volumeId());
    rounds:
    for (int round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      // Step 1: the volume, its guard and every claim the guard lists, at the guard's revision.
      TxnResponse read = txn(TxnRequest.newBuilder().addSuccess(range(volumeKey))
          .addSuccess(range(guard)).addSuccess(range(deleteKey)).build());
      List<KeyValue> volumeKv = read.getResponses(0).getResponseRange().getKvsList();
      if (volumeKv.isEmpty()) {
        throw refused(ClaimRefusedException.Reason.NOT_REGISTERED, what + " refused: the volume is not registered in "
            + "the cluster (csi-agent cluster volume register or create)", null);
      }
      ClusterVolume volume = VolumeCodec.decodeVolume(volumeKv.get(0).getValue());
      if (read.getResponses(2).getResponseRange().getKvsCount() > 0) {
        throw refused(ClaimRefusedException.Reason.BEING_DELETED, what + " refused: the volume is being deleted "
            + "(csi-agent cluster volume delete; see cluster volume status)", null);
      }
      if (!volume.accessModes().isEmpty() && !volume.accessModes().contains(request.mode())) {
        throw refused(ClaimRefusedException.Reason.MODE_NOT_OFFERED, what + " refused: access mode " + request.mode()
            + " is not one of the volume's " + volume.accessModes(), null);
      }
      if (!volume.accessibleFrom(request.nodeTopology())) {
        throw refused(ClaimRefusedException.Reason.TOPOLOGY, what + " refused: the volume is accessible from "
            + volume.accessibleTopology() + ", and node " + request.nodeId() + " is at " + request.nodeTopology(), null);
      }
      Optional<KeyValue> guardKv = kvAt(read, 1);
      if (guardKv.isEmpty()) {
        makeGuard(guard);
        continue;
      }
      Optional<List<KeyValue>> listed = guardedClaims(guard, guardKv.get());
      if (listed.isEmpty()) {
        continue; // another claim of the volume meanwhile: decided again
      }
      List<ClusterClaim> existing = new ArrayList<>();
      List<String> live = new ArrayList<>();
      for (KeyValue kv : listed.get()) {
        live.add(kv.getKey().toStringUtf8());
        Optional<String> bad = problem(() -> existing.add(claimAtItsKey(kv)));
        if (bad.isPresent()) {
          String key = kv.getKey().toStringUtf8();
          String node = keys.parseClaimKey(key).map(CatalogKeys.ClaimPath::nodeId).orElse("N");
          throw refused(ClaimRefusedException.Reason.UNREADABLE_CLAIM, what + " refused: the claim key " + key
              + " does not read (" + bad.get() + "), so it is taken to hold the volume; csi-agent cluster volume "
              + "detach --node " + node + " --force removes it", null);
        }
      }
      // Step 2: the rules against every other claim, cluster-wide.
      ClusterClaim wanted = request.toClaim(clock.instant());
      for (ClusterClaim e : existing) {
        if (e.nodeId().equals(request.nodeId()) && e.allocId().equals(request.allocId())) {
          if (e.mode() == request.mode() && e.readOnly() == request.readOnly() && e.access().equals(request.access())) {
            // Asked again (a mount tried again, a task restarted with the same alloc id): the same value put again,
            // so that it has a new revision. A release of the claim as it was before (still on its way from an
            // earlier unmount) is conditional on the old one and removes nothing; a FAILED attachment older than
            // the new revision is the old claim's answer, which the controller agent clears (through an unpublish).
            TxnResponse again = txn(TxnRequest.newBuilder().addCompare(modIs(claimKey, e.revision()))
                .addSuccess(put(claimKey, VolumeCodec.encode(e), 0)).build());
            if (again.getSucceeded()) {
              return e.withRevision(again.getHeader().getRevision());
            }
            continue rounds; // released or changed in between: decided again
          }
          throw refused(ClaimRefusedException.Reason.ALREADY_CLAIMED_OTHERWISE, what + " refused: the allocation "
              + "claims it already as " + e.mode() + (e.readOnly() ? " read-only" : "") + ", " + e.access()
              + "; release it first", e);
        }
      }
      Optional<ClaimRules.Conflict> conflict = ClaimRules.conflict(wanted, existing);
      if (conflict.isPresent()) {
        throw refused(ClaimRefusedException.Reason.ACCESS_MODE, what + " (" + request.mode()
            + (request.readOnly() ? " read-only" : "") + ") refused: held by " + conflict.get().holder().holder() + " as "
            + conflict.get().holder().mode() + (conflict.get().holder().readOnly() ? " read-only" : "") + ": "
            + conflict.get().why(), conflict.get().holder());
      }
      // Step 3: the put, only if the volume is as read and no claim of it was written since (each one puts the
      // guard); a claim released meanwhile changes nothing the decision relied on.
      TxnResponse w = txn(TxnRequest.newBuilder()
          .addCompare(Compare.newBuilder().setKey(bytes(volumeKey)).setTarget(Compare.CompareTarget.MOD)
              .setResult(Compare.CompareResult.EQUAL).setModRevision(volumeKv.get(0).getModRevision()))
          .addCompare(modIs(guard, guardKv.get().getModRevision()))
          .addCompare(absent(deleteKey))
          .addSuccess(put(guard, guardListing(plus(live, claimKey)), 0))
          .addSuccess(put(claimKey, VolumeCodec.encode(wanted), 0)).build());
      if (w.getSucceeded()) {
        log.info("{} granted ({}{}) at revision {}", what, request.mode(), request.readOnly() ? " read-only" : "",
            w.getHeader().getRevision());
        return wanted.withRevision(w.getHeader().getRevision());
      }
      log.debug("{}: the volume's claims changed while deciding (round {}); reading again", what, round);
    }
    throw new EtcdException(what + ": the volume's claims kept changing for " + MAX_CLAIM_ROUNDS + " rounds",
        "CONTENTION", null);
  }

  /** A claim value that does not read is never guessed at: it holds the volume as a writer of its key. */
  private ClusterClaim decodeClaim(KeyValue kv) {
    return VolumeCodec.decodeClaim(kv.getValue(), kv.getModRevision());
  }

  private static ClaimRefusedException refused(ClaimRefusedException.Reason reason, String message, ClusterClaim holder) {
    log.info("{}", message);
    return new ClaimRefusedException(reason, message, holder, null);
  }

  @Override
  public boolean release(String pluginId, String volumeId, String nodeId, String allocId) {
    String key = keys.claimKey(pluginId, volumeId, nodeId, allocId);
    TxnResponse r = txn(TxnRequest.newBuilder()
        .addSuccess(RequestOp.newBuilder().setRequestDeleteRange(DeleteRangeRequest.newBuilder().setKey(bytes(key))))
        .build());
    boolean existed = r.getResponses(0).getResponseDeleteRange().getDeleted() > 0;
    if (existed) {
      log.info("claim of {}/{} for {}/{} released", pluginId, volumeId, nodeId, allocId);
    }
    return existed;
  }

  @Override
  public boolean release(ClusterClaim claim) {
    if (claim.revision() == 0) {
      return release(claim.pluginId(), claim.volumeId(), claim.nodeId(), claim.allocId());
    }
    String key = keys.claimKey(claim.pluginId(), claim.volumeId(), claim.nodeId(), claim.allocId());
    boolean released = txn(TxnRequest.newBuilder().addCompare(modIs(key, claim.revision())).addSuccess(delete(key))
        .build()).getSucceeded();
    if (released) {
      log.info("claim of {}/{} for {}/{} released (revision {})", claim.pluginId(), claim.volumeId(), claim.nodeId(),
          claim.allocId(), claim.revision());
    }
    return released;
  }

  @Override
  public List<ClusterClaim> claims(String pluginId, String volumeId) {
    String guard = keys.claimGuardKey(pluginId, volumeId);
    for (int round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      Optional<KeyValue> guardKv = kvAt(txn(TxnRequest.newBuilder().addSuccess(range(guard)).build()), 0);
      if (guardKv.isEmpty()) {
        return List.of();
      }
      Optional<List<KeyValue>> claims = guardedClaims(guard, guardKv.get());
      if (claims.isPresent()) {
        return claims.get().stream().map(this::decodeClaim).toList();
      }
    }
    throw new EtcdException("claims of " + pluginId + "/" + volumeId + ": they kept changing", "CONTENTION", null);
  }

  @Override
  public List<ClusterClaim> claimsOfNode(String nodeId) {
    CatalogKeys.checkNodeId(nodeId);
    TxnResponse r = txn(TxnRequest.newBuilder().addSuccess(rangePrefix(keys.nodeClaimsRoot(nodeId), 0)).build());
    List<ClusterClaim> out = new ArrayList<>();
    for (KeyValue kv : r.getResponses(0).getResponseRange().getKvsList()) {
      decodeOrSkip(kv, () -> out.add(claimAtItsKey(kv)));
    }
    return out;
  }

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
    for (int i = 0; i < ops.size(); i += MAX_TXN_OPS) {
      txn(TxnRequest.newBuilder().addAllSuccess(ops.subList(i, Math.min(ops.size(), i + MAX_TXN_OPS))).build());
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
      return Optional.of(attachmentAtItsKey(r.getKvs(0)));
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("the attachment key " + key + " does not read (" + e.getMessage() + "); "
          + "csi-agent cluster volume detach --node " + nodeId + " --force removes it", e);
    }
  }

  @Override
  public boolean controllerPublishes(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    Optional<KeyValue> mirroredCaps = mirrored(keys.capabilitiesKey(pluginId)).orElse(Optional.empty());
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

  @Override
  public VolumesSnapshot read() {
    VolumesInformer mirror = informer;
    if (mirror != null) {
      Optional<VolumesSnapshot> mirrored = mirror.snapshot();
      if (mirrored.isPresent()) {
        return mirrored.get();
      }
    }
    TxnRequest.Builder t = TxnRequest.newBuilder();
    List<String> roots = snapshotRoots();
    for (String root : roots) {
      t.addSuccess(rangePrefix(root, 0));
    }
    TxnResponse r = txn(t.build());
    Map<String, List<KeyValue>> byRoot = new HashMap<>();
    for (int i = 0; i < roots.size(); i++) {
      byRoot.put(roots.get(i), r.getResponses(i).getResponseRange().getKvsList());
    }
    return decodeSnapshot(r.getHeader().getRevision(), byRoot);
  }

  /** Whether the watch-fed mirror is open and in sync. */
  boolean mirrorSynced() {
    VolumesInformer mirror = informer;
    return mirror != null && mirror.synced();
  }

  /** A key as the mirror has it (present or not); empty without a mirror in sync. */
  private Optional<Optional<KeyValue>> mirrored(String key) {
    VolumesInformer mirror = informer;
    return mirror == null ? Optional.empty() : mirror.get(key);
  }

  /** The roots a snapshot is made of (and the mirror keeps). */
  private List<String> snapshotRoots() {
    return List.of(keys.volumesRoot(), keys.claimsRoot(), keys.attachmentsRoot(), keys.controllersRoot(),
        keys.nodesRoot(), keys.requestsRoot(), keys.stoppedRoot(), keys.capabilitiesRoot(), keys.detachesRoot());
  }

  /** A snapshot of the keys under each of {@link #snapshotRoots}, read at {@code revision}. */
  private VolumesSnapshot decodeSnapshot(long revision, Map<String, List<KeyValue>> byRoot) {
    return decodeSnapshot(revision, byRoot, DecodeMemo.none());
  }

  /** The same, decoding only the keys that changed since {@code memo} saw them. */
  private VolumesSnapshot decodeSnapshot(long revision, Map<String, List<KeyValue>> byRoot, DecodeMemo memo) {
    List<ClusterVolume> volumes = new ArrayList<>();
    List<ClusterClaim> claims = new ArrayList<>();
    List<ClusterAttachment> attachments = new ArrayList<>();
    Map<String, String> controllers = new HashMap<>();
    Set<String> nodes = new HashSet<>();
    for (KeyValue kv : byRoot.get(keys.volumesRoot())) {
      decodeOrSkip(kv, () -> volumes.add(memo.get(kv, () -> VolumeCodec.decodeVolume(kv.getValue()))));
    }
    List<VolumesSnapshot.DamagedKey> damaged = new ArrayList<>();
    for (KeyValue kv : byRoot.get(keys.claimsRoot())) {
      String key = kv.getKey().toStringUtf8();
      Optional<String> bad = problem(() -> claims.add(memo.get(kv, () -> claimAtItsKey(kv))));
      bad.ifPresent(why -> damaged.add(keys.parseClaimKey(key).map(c -> new VolumesSnapshot.DamagedKey(key, why,
          "claim", c.pluginId(), c.volumeId(), c.nodeId())).orElse(new VolumesSnapshot.DamagedKey(key, why, "claim",
          "", "", ""))));
    }
    for (KeyValue kv : byRoot.get(keys.attachmentsRoot())) {
      String key = kv.getKey().toStringUtf8();
      Optional<String> bad = problem(() -> attachments.add(memo.get(kv, () -> attachmentAtItsKey(kv))));
      bad.ifPresent(why -> damaged.add(keys.parseAttachmentKey(key).map(a -> new VolumesSnapshot.DamagedKey(key, why,
          "attachment", a.pluginId(), a.volumeId(), a.nodeId())).orElse(new VolumesSnapshot.DamagedKey(key, why,
          "attachment", "", "", ""))));
    }
    for (KeyValue kv : byRoot.get(keys.controllersRoot())) {
      decodeOrSkip(kv, () -> controllers.put(kv.getKey().toStringUtf8().substring(keys.controllersRoot().length()),
          memo.get(kv, () -> VolumeCodec.decodeController(kv.getValue())).node()));
    }
    for (KeyValue kv : byRoot.get(keys.nodesRoot())) {
      keys.parseNodeKey(kv.getKey().toStringUtf8()).ifPresent(nodes::add);
    }
    List<ClusterVolumeRequest> requests = new ArrayList<>();
    for (KeyValue kv : byRoot.get(keys.requestsRoot())) {
      decodeOrSkip(kv, () -> requests.add(memo.get(kv, () -> VolumeCodec.decodeRequest(kv.getValue(),
          kv.getModRevision()))));
    }
    Map<String, java.time.Instant> stopped = new HashMap<>();
    for (KeyValue kv : byRoot.get(keys.stoppedRoot())) {
      String node = kv.getKey().toStringUtf8().substring(keys.stoppedRoot().length());
      decodeOrSkip(kv, () -> stopped.put(node, java.time.Instant.parse(VolumeCodec.decodeController(kv.getValue()).since())));
    }
    Map<String, DetachOrder> orders = new HashMap<>();
    for (KeyValue kv : byRoot.get(keys.detachesRoot())) {
      decodeOrSkip(kv, () -> {
        DetachOrder o = memo.get(kv, () -> VolumeCodec.decodeDetachOrder(kv.getValue()));
        orders.put(o.nodeId(), o);
      });
    }
    return new VolumesSnapshot(revision, volumes, claims, attachments, controllers, nodes, requests, stopped, damaged,
        orders);
  }

  /** Why {@code decode} failed, logged once per read; empty if it did not. */
  private static Optional<String> problem(Runnable decode) {
    try {
      decode.run();
      return Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /** A claim whose value says what its key says (plugin, volume, node, alloc); else it does not read. */
  private ClusterClaim claimAtItsKey(KeyValue kv) {
    ClusterClaim c = decodeClaim(kv);
    String key = kv.getKey().toStringUtf8();
    if (!key.equals(keys.claimKey(c.pluginId(), c.volumeId(), c.nodeId(), c.allocId()))) {
      throw new IllegalArgumentException("its value is the claim of " + c.pluginId() + "/" + c.volumeId() + " for "
          + c.holder() + ", which is not what its key says");
    }
    return c;
  }

  /** An attachment whose value says what its key says (plugin, volume, node); else it does not read. */
  private ClusterAttachment attachmentAtItsKey(KeyValue kv) {
    ClusterAttachment a = VolumeCodec.decodeAttachment(kv.getValue(), kv.getModRevision());
    if (!kv.getKey().toStringUtf8().equals(keys.attachmentKey(a.pluginId(), a.volumeId(), a.nodeId()))) {
      throw new IllegalArgumentException("its value is the attachment of " + a.pluginId() + "/" + a.volumeId()
          + " to node " + a.nodeId() + ", which is not what its key says");
    }
    return a;
  }

  private static void decodeOrSkip(KeyValue kv, Runnable decode) {
    try {
      decode.run();
    } catch (IllegalArgumentException e) {
      log.warn("cluster volumes: skipping {}: {}", kv.getKey().toStringUtf8(), e.getMessage());
    }
  }

  /** The election lease, granted (and kept alive) if there is none. */
  private long lease() {
    synchronized (leaseLock) {
      if (closed) {
        throw new EtcdException("cluster volumes closed", "CLOSED", null);
      }
      if (leaseId != 0) {
        return leaseId;
      }
      long asked = System.nanoTime();
      long id = call(() -> client.grantLease(ttlSeconds));
      leaseId = id;
      leaseSureUntil = asked + TimeUnit.SECONDS.toNanos(ttlSeconds);
      keepAlive = LeaseKeepAlive.start(client, id, ttlSeconds, KEEPALIVE, (LeaseKeepAlive.Answered) (ttl, sent) -> {
        synchronized (leaseLock) {
          if (leaseId == id) {
            leaseSureUntil = Math.max(leaseSureUntil, sent + TimeUnit.SECONDS.toNanos(ttl));
          }
        }
      }, (ka, e) -> {
        boolean lost = false;
        synchronized (leaseLock) {
          if (ka == keepAlive) {
            log.warn("cluster volumes: election lease {} of node {} lost ({}); campaigning again with a new one",
                Long.toHexString(id), nodeId, e.getMessage());
            keepAlive.stop();
            keepAlive = null;
            leaseId = 0;
            leaseSureUntil = 0;
            client.failover();
            lost = true;
          }
        }
        if (lost) {
          leaseLost.forEach(EtcdClusterVolumes::runQuietly);
        }
      });
      return id;
    }
  }

  private static void runQuietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("cluster volumes: a lease-lost listener failed", e);
    }
  }

  @Override
  public Optional<Leadership> lead(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    String key = keys.controllerKey(pluginId);
    Optional<KeyValue> mirrored = mirrored(key).orElse(Optional.empty());
    if (mirrored.isPresent()) {
      // Held: by this agent's live lease (leading still) or by another's (nothing to ask etcd until the key goes).
      long held = mirrored.get().getLease();
      long ours;
      synchronized (leaseLock) {
        ours = leaseId;
      }
      return held == ours && ours != 0
          ? Optional.of(new Leadership(pluginId, nodeId, mirrored.get().getCreateRevision(), ours))
          : Optional.empty();
    }
    long lease = lease();
    TxnResponse r = txn(TxnRequest.newBuilder()
        .addCompare(Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.CREATE)
            .setResult(Compare.CompareResult.EQUAL).setCreateRevision(0))
        .addSuccess(put(key, VolumeCodec.encodeController(nodeId, clock.instant()), lease))
        .addFailure(range(key)).build());
    if (r.getSucceeded()) {
      log.info("node {} is now the controller agent of plugin {}", nodeId, pluginId);
      return Optional.of(new Leadership(pluginId, nodeId, r.getHeader().getRevision(), lease));
    }
    List<KeyValue> kvs = r.getResponses(0).getResponseRange().getKvsList();
    if (!kvs.isEmpty() && kvs.get(0).getLease() == lease) {
      return Optional.of(new Leadership(pluginId, nodeId, kvs.get(0).getCreateRevision(), lease));
    }
    return Optional.empty();
  }

  @Override
  public void resign(Leadership l) {
    txn(TxnRequest.newBuilder().addCompare(held(l)).addSuccess(delete(keys.controllerKey(l.pluginId()))).build());
  }

  @Override
  public Duration leadershipLeft(Leadership l) {
    synchronized (leaseLock) {
      if (closed || leaseId == 0 || leaseId != l.leaseId()) {
        return Duration.ZERO;
      }
      long left = leaseSureUntil - System.nanoTime();
      return left <= 0 ? Duration.ZERO : Duration.ofNanos(left);
    }
  }

  @Override
  public void onLeaseLost(Runnable lost) {
    leaseLost.add(Objects.requireNonNull(lost, "lost"));
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

  @Override
  public List<CatalogEntry> controllersOf(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    String prefix = keys.pluginEntriesPrefix(dev.csisupervisor.registry.PluginType.CSI_CONTROLLER, pluginId);
    TxnResponse r = txn(TxnRequest.newBuilder().addSuccess(rangePrefix(prefix, 0)).build());
    List<CatalogEntry> out = new ArrayList<>();
    for (KeyValue kv : r.getResponses(0).getResponseRange().getKvsList()) {
      decodeOrSkip(kv, () -> out.add(CatalogCodec.decodeEntry(kv.getValue())));
    }
    return out;
  }

  @Override
  public ClusterVolumeRequest requestCreate(ClusterVolumeRequest request) throws VolumeStateException {
    if (request.kind() != ClusterVolumeRequest.Kind.CREATE || request.state() != ClusterVolumeRequest.State.PENDING) {
      throw new IllegalArgumentException("request must be a new create, got " + request.kind() + " " + request.state());
    }
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    for (int round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      TxnResponse r = txn(TxnRequest.newBuilder().addCompare(absent(key))
          .addSuccess(put(key, VolumeCodec.encode(request), 0)).addFailure(range(key)).build());
      if (r.getSucceeded()) {
        log.info("{} asked", request.describe());
        return request.withRevision(r.getHeader().getRevision());
      }
      List<KeyValue> kvs = r.getResponses(0).getResponseRange().getKvsList();
      if (kvs.isEmpty()) {
        continue; // withdrawn in between
      }
      ClusterVolumeRequest existing = VolumeCodec.decodeRequest(kvs.get(0).getValue(), kvs.get(0).getModRevision());
      boolean gone = existing.state() == ClusterVolumeRequest.State.DONE
          && volume(existing.pluginId(), existing.volumeId()).isEmpty();
      if (existing.state() == ClusterVolumeRequest.State.FAILED || gone) {
        // Asked again after a final error, or its volume deregistered since: tried afresh, as asked now (CreateVolume
        // is idempotent by name: a volume the plugin still has is answered again).
        if (replace(key, existing.revision(), request)) {
          log.info("{} asked again (it had failed: {})", request.describe(), existing.message());
          return request(request.kind(), request.pluginId(), request.name()).orElse(request);
        }
        continue;
      }
      if (existing.asksSameAs(request)) {
        return existing;
      }
      throw new VolumeStateException(request.describe() + " is asked already with other content (" + existing.state()
          + (existing.state() == ClusterVolumeRequest.State.DONE ? ", made volume " + existing.volumeId() : "")
          + ": " + existing.spec() + "); delete that volume first, or use another name");
    }
    throw new EtcdException(request.describe() + ": the request kept changing", "CONTENTION", null);
  }

  /** Puts {@code request} over the key if its mod revision is still {@code revision}. */
  private boolean replace(String key, long revision, ClusterVolumeRequest request) {
    return txn(TxnRequest.newBuilder().addCompare(modIs(key, revision))
        .addSuccess(put(key, VolumeCodec.encode(request), 0)).build()).getSucceeded();
  }

  @Override
  public Optional<ClusterVolumeRequest> requestDelete(ClusterVolumeRequest request) throws VolumeStateException {
    if (request.kind() != ClusterVolumeRequest.Kind.DELETE || request.state() != ClusterVolumeRequest.State.PENDING) {
      throw new IllegalArgumentException("request must be a new delete, got " + request.kind() + " " + request.state());
    }
    String plugin = request.pluginId();
    String volumeId = request.name();
    String key = keys.requestKey(request.kind(), plugin, volumeId);
    String volumeKey = keys.volumeKey(plugin, volumeId);
    String guard = keys.claimGuardKey(plugin, volumeId);
    String attachments = keys.volumeAttachmentsPrefix(plugin, volumeId);
    for (int round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      TxnResponse read = txn(TxnRequest.newBuilder().addSuccess(range(volumeKey))
          .addSuccess(range(guard)).addSuccess(rangePrefix(attachments, 10)).addSuccess(range(key)).build());
      if (read.getResponses(0).getResponseRange().getKvsCount() == 0) {
        return Optional.empty();
      }
      Optional<KeyValue> guardKv = kvAt(read, 1);
      if (guardKv.isEmpty()) {
        makeGuard(guard);
        continue;
      }
      Optional<List<KeyValue>> claims = guardedClaims(guard, guardKv.get());
      if (claims.isEmpty()) {
        continue;
      }
      List<String> held = new ArrayList<>();
      for (KeyValue kv : claims.get()) {
        held.add(describeOrKey(kv, () -> {
          ClusterClaim c = decodeClaim(kv);
          return "claim by " + c.holder() + " (" + c.mode() + ")";
        }));
      }
      for (KeyValue kv : read.getResponses(2).getResponseRange().getKvsList()) {
        held.add(describeOrKey(kv, () -> {
          ClusterAttachment a = VolumeCodec.decodeAttachment(kv.getValue());
          return "attachment to node " + a.nodeId() + " (" + a.state() + ")";
        }));
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
          .addCompare(modIs(guard, guardKv.get().getModRevision())).addCompare(none(attachments)).addCompare(absent(key))
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

  private static String describeOrKey(KeyValue kv, Supplier<String> describe) {
    try {
      return describe.get();
    } catch (IllegalArgumentException e) {
      return kv.getKey().toStringUtf8();
    }
  }

  @Override
  public Optional<ClusterVolumeRequest> request(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    String key = keys.requestKey(kind, pluginId, name);
    var r = call(() -> client.range(RangeRequest.newBuilder().setKey(bytes(key)).build()));
    return r.getKvsCount() == 0 ? Optional.empty()
        : Optional.of(VolumeCodec.decodeRequest(r.getKvs(0).getValue(), r.getKvs(0).getModRevision()));
  }

  @Override
  public boolean withdraw(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    for (int round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      Optional<ClusterVolumeRequest> r = request(kind, pluginId, name);
      if (r.isEmpty() || r.get().state() == ClusterVolumeRequest.State.DONE) {
        return false;
      }
      String key = keys.requestKey(kind, pluginId, name);
      if (txn(TxnRequest.newBuilder().addCompare(modIs(key, r.get().revision())).addSuccess(delete(key)).build())
          .getSucceeded()) {
        log.info("{} withdrawn ({})", r.get().describe(), r.get().state());
        return true;
      }
    }
    throw new EtcdException("withdraw of " + pluginId + "/" + name + ": the request kept changing", "CONTENTION", null);
  }

  @Override
  public Optional<ClusterVolumeRequest> updateRequest(Leadership l, ClusterVolumeRequest from, ClusterVolumeRequest to) {
    String key = keys.requestKey(from.kind(), from.pluginId(), from.name());
    TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, from.revision()));
    if (from.kind() == ClusterVolumeRequest.Kind.DELETE) {
      // No claim can be written while the delete request exists (a claim's transaction compares it absent), and
      // there was none when it was made (requestDelete); attachments are the controller agent's own.
      t.addCompare(none(keys.volumeAttachmentsPrefix(from.pluginId(), from.name())));
    }
    TxnResponse r = txn(t.addSuccess(put(key, VolumeCodec.encode(to), 0)).build());
    return r.getSucceeded() ? Optional.of(to.withRevision(r.getHeader().getRevision())) : Optional.empty();
  }

  @Override
  public boolean completeCreate(Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    String volumeKey = keys.volumeKey(volume.pluginId(), volume.volumeId());
    ByteString done = VolumeCodec.encode(request.done(volume.volumeId()));
    TxnResponse r = txn(TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, request.revision()))
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
    return txn(TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, request.revision()))
        .addSuccess(put(key, done, 0)).build()).getSucceeded();
  }

  @Override
  public boolean completeDelete(Leadership l, ClusterVolumeRequest request) {
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    String creates = keys.requestsPrefix(ClusterVolumeRequest.Kind.CREATE, request.pluginId());
    TxnResponse made = txn(TxnRequest.newBuilder().addSuccess(rangePrefix(creates, 0)).build());
    TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, request.revision()))
        .addSuccess(delete(keys.volumeKey(request.pluginId(), request.name()))).addSuccess(delete(key));
    for (KeyValue kv : made.getResponses(0).getResponseRange().getKvsList()) {
      try {
        ClusterVolumeRequest c = VolumeCodec.decodeRequest(kv.getValue(), kv.getModRevision());
        if (c.state() == ClusterVolumeRequest.State.DONE && c.volumeId().equals(request.name())) {
          t.addSuccess(delete(kv.getKey().toStringUtf8()));
        }
      } catch (IllegalArgumentException e) {
        log.warn("cluster volumes: skipping {}: {}", kv.getKey().toStringUtf8(), e.getMessage());
      }
    }
    boolean done = txn(t.build()).getSucceeded();
    if (done) {
      log.info("{} done: the volume's key removed", request.describe());
    }
    return done;
  }

  @Override
  public AutoCloseable watchChanges(Runnable changed) {
    Objects.requireNonNull(changed, "changed");
    VolumesInformer mirror = new VolumesInformer(client, keys, snapshotRoots(), this::decodeSnapshot, changed,
        MIRROR_RESYNC);
    informer = mirror;
    mirror.open();
    return () -> {
      mirror.close();
      if (informer == mirror) {
        informer = null;
      }
    };
  }

  /** Unary etcd requests made by this client (not its streams): what a controller round costs. */
  @Override
  public long etcdRequests() {
    return client.unaryCalls();
  }

  @Override
  public void close() {
    long lease;
    synchronized (leaseLock) {
      if (closed) {
        return;
      }
      closed = true;
      lease = leaseId;
      if (keepAlive != null) {
        keepAlive.stop();
        keepAlive = null;
      }
      leaseId = 0;
    }
    if (lease != 0) {
      try {
        client.revokeLease(lease);
      } catch (EtcdException e) {
        log.warn("cluster volumes: could not revoke election lease {} (it expires with its TTL): {}",
            Long.toHexString(lease), e.getMessage());
      }
    }
    client.close();
  }

}
