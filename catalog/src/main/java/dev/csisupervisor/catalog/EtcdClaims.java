package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.absent;
import static dev.csisupervisor.catalog.EtcdOps.bytes;
import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.modIs;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;
import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.DeleteRangeRequest;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node side of cluster volumes in etcd: claims and their guards. Each node's claims are under its own prefix
 * ({@code claims/<node>/...}, which etcd's permissions can confine to it: {@link EtcdRoles}); each volume's claim
 * guard ({@link CatalogKeys#claimGuardKey}) lists the volume's claim keys and serialises its claims: a claim reads
 * the volume, the guard and the claims it lists, decides against every one of them ({@link ClaimRules}), and writes
 * itself and the guard only if the guard is unchanged. Releases are conditional on the claim as taken. Thread-safe.
 */
final class EtcdClaims {
  private static final Logger log = LoggerFactory.getLogger(EtcdClaims.class);
  /** Rounds of read-then-write a claim makes while other claims of the volume keep landing in between. */
  static final int MAX_CLAIM_ROUNDS = 50;

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final Clock clock;

  EtcdClaims(EtcdOps ops, Clock clock) {
    this.ops = ops;
    this.keys = ops.keys;
    this.clock = clock;
  }

  private TxnResponse txn(TxnRequest t) {
    return ops.txn(t);
  }

  /**
   * Puts an absent claim guard. Every decision on a volume's claims compares its guard with a revision read while
   * it existed: a guard deleted behind one's back (a node's user may write the guards) reads as a change, never as
   * the absence first read (which a delete after a claim would bring back).
   */
  void makeGuard(String guard) {
    txn(TxnRequest.newBuilder().addCompare(absent(guard)).addSuccess(put(guard, ByteString.EMPTY, 0)).build());
  }

  /**
   * The claims of one volume, found through its guard, whose value lists the claim keys written by every claim of
   * the volume since (a claim released or forced away leaves its line until the next claim rewrites the list):
   * each listed key is read, all at the guard's revision, so a claim reads what its volume has, not every claim
   * of the cluster. Empty (the caller reads again) if the guard changed meanwhile.
   */
  Optional<List<KeyValue>> guardedClaims(String guard, KeyValue guardKv) {
    List<String> listed = listedClaims(guard, guardKv);
    List<KeyValue> claims = new ArrayList<>();
    for (int from = 0; from < listed.size(); from += EtcdOps.MAX_TXN_OPS - 1) {
      TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(modIs(guard, guardKv.getModRevision()));
      listed.subList(from, Math.min(listed.size(), from + EtcdOps.MAX_TXN_OPS - 1)).forEach(k -> t.addSuccess(range(k)));
      TxnResponse r = txn(t.build());
      if (!r.getSucceeded()) {
        return Optional.empty();
      }
      r.getResponsesList().forEach(op -> claims.addAll(op.getResponseRange().getKvsList()));
    }
    return Optional.of(claims);
  }

  static List<String> plus(List<String> list, String one) {
    List<String> out = new ArrayList<>(list);
    out.add(one);
    return out;
  }

  /** The claim keys a guard lists (only keys of its own volume's claims). */
  List<String> listedClaims(String guard, KeyValue guardKv) {
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
  ByteString guardListing(java.util.Collection<String> claimKeys) {
    return ByteString.copyFromUtf8(String.join("\n", new java.util.TreeSet<>(claimKeys.stream()
        .map(k -> k.substring(keys.claimsRoot().length())).toList())));
  }

  /** A volume's claims as its guard listed them, and the guard's revision they were read at. */
  record Guarded(long guardRevision, List<KeyValue> claims) {}

  /**
   * The volume's claims as its guard (ranged at {@code index} of {@code read}) lists them; empty when the caller must
   * read again: the guard was absent (made now) or changed meanwhile.
   */
  Optional<Guarded> guarded(TxnResponse read, int index, String guard) {
    Optional<KeyValue> g = kvAt(read, index);
    if (g.isEmpty()) {
      makeGuard(guard);
      return Optional.empty();
    }
    return guardedClaims(guard, g.get()).map(c -> new Guarded(g.get().getModRevision(), c));
  }

  /** The guard's kv in the range at {@code index} of {@code r}; empty if it is absent. */
  static Optional<KeyValue> kvAt(TxnResponse r, int index) {
    List<KeyValue> kvs = r.getResponses(index).getResponseRange().getKvsList();
    return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0));
  }

  ClusterClaim claim(ClaimRequest request) throws ClaimRefusedException {
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
      Optional<Guarded> listed = guarded(read, 1, guard);
      if (listed.isEmpty()) {
        continue; // the guard made now, or another claim of the volume meanwhile: decided again
      }
      List<ClusterClaim> existing = new ArrayList<>();
      List<String> live = new ArrayList<>();
      for (KeyValue kv : listed.get().claims()) {
        live.add(kv.getKey().toStringUtf8());
        Optional<String> bad = EtcdOps.problem(() -> existing.add(claimAtItsKey(kv)));
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
          .addCompare(modIs(guard, listed.get().guardRevision()))
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
  ClusterClaim decodeClaim(KeyValue kv) {
    return VolumeCodec.decodeClaim(kv.getValue(), kv.getModRevision());
  }

  static ClaimRefusedException refused(ClaimRefusedException.Reason reason, String message, ClusterClaim holder) {
    log.info("{}", message);
    return new ClaimRefusedException(reason, message, holder, null);
  }

  boolean release(String pluginId, String volumeId, String nodeId, String allocId) {
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

  boolean release(ClusterClaim claim) {
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

  List<ClusterClaim> claims(String pluginId, String volumeId) {
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

  List<ClusterClaim> claimsOfNode(String nodeId) {
    CatalogKeys.checkNodeId(nodeId);
    TxnResponse r = txn(TxnRequest.newBuilder().addSuccess(rangePrefix(keys.nodeClaimsRoot(nodeId), 0)).build());
    List<ClusterClaim> out = new ArrayList<>();
    for (KeyValue kv : r.getResponses(0).getResponseRange().getKvsList()) {
      EtcdOps.decodeOrSkip(kv, () -> out.add(claimAtItsKey(kv)));
    }
    return out;
  }

  /** A claim whose value says what its key says (plugin, volume, node, alloc); else it does not read. */
  ClusterClaim claimAtItsKey(KeyValue kv) {
    ClusterClaim c = decodeClaim(kv);
    String key = kv.getKey().toStringUtf8();
    if (!key.equals(keys.claimKey(c.pluginId(), c.volumeId(), c.nodeId(), c.allocId()))) {
      throw new IllegalArgumentException("its value is the claim of " + c.pluginId() + "/" + c.volumeId() + " for "
          + c.holder() + ", which is not what its key says");
    }
    return c;
  }
}
