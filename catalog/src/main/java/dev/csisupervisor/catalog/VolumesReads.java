package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;

import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Everything a controller round acts on, at one revision ({@link VolumesSnapshot}): read from etcd, or, while {@link
 * #watchChanges} is open and in sync, from the watch-fed mirror ({@link VolumesInformer}). Keys whose value does not
 * read are never guessed at: claims and attachments among them are listed as damaged (they still hold their volume),
 * others skipped with a warning. Thread-safe.
 */
final class VolumesReads {
  static final Duration MIRROR_RESYNC = Duration.ofMinutes(5);

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final EtcdClaims claimStore;
  /** The watch-fed mirror while {@link #watchChanges} is open. */
  private volatile VolumesInformer informer;

  VolumesReads(EtcdOps ops, EtcdClaims claims) {
    this.ops = ops;
    this.keys = ops.keys;
    this.claimStore = claims;
  }

  private TxnResponse txn(TxnRequest t) {
    return ops.txn(t);
  }

  VolumesSnapshot read() {
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
  Optional<Optional<KeyValue>> mirrored(String key) {
    VolumesInformer mirror = informer;
    return mirror == null ? Optional.empty() : mirror.get(key);
  }

  /** The roots a snapshot is made of (and the mirror keeps). */
  List<String> snapshotRoots() {
    return List.of(keys.volumesRoot(), keys.claimsRoot(), keys.attachmentsRoot(), keys.controllersRoot(),
        keys.nodesRoot(), keys.requestsRoot(), keys.stoppedRoot(), keys.capabilitiesRoot(), keys.detachesRoot(),
        keys.snapshotsRoot());
  }

  /** A snapshot of the keys under each of {@link #snapshotRoots}, read at {@code revision}. */
  VolumesSnapshot decodeSnapshot(long revision, Map<String, List<KeyValue>> byRoot) {
    return decodeSnapshot(revision, byRoot, new DecodeMemo()); // one read: each key is decoded once anyway
  }

  /** The same, decoding only the keys that changed since {@code memo} saw them. */
  VolumesSnapshot decodeSnapshot(long revision, Map<String, List<KeyValue>> byRoot, DecodeMemo memo) {
    List<ClusterVolume> volumes = new ArrayList<>();
    List<ClusterClaim> claims = new ArrayList<>();
    List<ClusterAttachment> attachments = new ArrayList<>();
    Map<String, String> controllers = new HashMap<>();
    Set<String> nodes = new HashSet<>();
    for (KeyValue kv : byRoot.get(keys.volumesRoot())) {
      EtcdOps.decodeOrSkip(kv, () -> volumes.add(memo.get(kv, () -> VolumeCodec.decodeVolume(kv.getValue()))));
    }
    List<VolumesSnapshot.DamagedKey> damaged = new ArrayList<>();
    for (KeyValue kv : byRoot.get(keys.claimsRoot())) {
      String key = kv.getKey().toStringUtf8();
      Optional<String> bad = EtcdOps.problem(() -> claims.add(memo.get(kv, () -> claimStore.claimAtItsKey(kv))));
      bad.ifPresent(why -> damaged.add(keys.parseClaimKey(key).map(c -> new VolumesSnapshot.DamagedKey(key, why,
          "claim", c.pluginId(), c.volumeId(), c.nodeId())).orElse(new VolumesSnapshot.DamagedKey(key, why, "claim",
          "", "", ""))));
    }
    for (KeyValue kv : byRoot.get(keys.attachmentsRoot())) {
      String key = kv.getKey().toStringUtf8();
      Optional<String> bad = EtcdOps.problem(() -> attachments.add(memo.get(kv, () -> attachmentAtItsKey(kv))));
      bad.ifPresent(why -> damaged.add(keys.parseAttachmentKey(key).map(a -> new VolumesSnapshot.DamagedKey(key, why,
          "attachment", a.pluginId(), a.volumeId(), a.nodeId())).orElse(new VolumesSnapshot.DamagedKey(key, why,
          "attachment", "", "", ""))));
    }
    for (KeyValue kv : byRoot.get(keys.controllersRoot())) {
      EtcdOps.decodeOrSkip(kv, () -> controllers.put(kv.getKey().toStringUtf8().substring(keys.controllersRoot().length()),
          memo.get(kv, () -> VolumeCodec.decodeController(kv.getValue())).node()));
    }
    for (KeyValue kv : byRoot.get(keys.nodesRoot())) {
      keys.parseNodeKey(kv.getKey().toStringUtf8()).ifPresent(nodes::add);
    }
    List<ClusterVolumeRequest> requests = new ArrayList<>();
    for (KeyValue kv : byRoot.get(keys.requestsRoot())) {
      EtcdOps.decodeOrSkip(kv, () -> requests.add(memo.get(kv, () -> VolumeCodec.decodeRequest(kv.getValue(),
          kv.getModRevision()))));
    }
    Map<String, java.time.Instant> stopped = new HashMap<>();
    for (KeyValue kv : byRoot.get(keys.stoppedRoot())) {
      String node = kv.getKey().toStringUtf8().substring(keys.stoppedRoot().length());
      EtcdOps.decodeOrSkip(kv, () -> stopped.put(node, java.time.Instant.parse(VolumeCodec.decodeController(kv.getValue()).since())));
    }
    Map<String, DetachOrder> orders = new HashMap<>();
    for (KeyValue kv : byRoot.get(keys.detachesRoot())) {
      EtcdOps.decodeOrSkip(kv, () -> {
        DetachOrder o = memo.get(kv, () -> VolumeCodec.decodeDetachOrder(kv.getValue()));
        orders.put(o.nodeId(), o);
      });
    }
    List<ClusterVolumeSnapshot> snapshots = new ArrayList<>();
    for (KeyValue kv : byRoot.get(keys.snapshotsRoot())) {
      EtcdOps.decodeOrSkip(kv, () -> snapshots.add(memo.get(kv, () -> VolumeCodec.decodeSnapshot(kv.getValue()))));
    }
    return new VolumesSnapshot(revision, volumes, claims, attachments, controllers, nodes, requests, stopped, damaged,
        orders, snapshots);
  }

  /** An attachment whose value says what its key says (plugin, volume, node); else it does not read. */
  ClusterAttachment attachmentAtItsKey(KeyValue kv) {
    ClusterAttachment a = VolumeCodec.decodeAttachment(kv.getValue(), kv.getModRevision());
    if (!kv.getKey().toStringUtf8().equals(keys.attachmentKey(a.pluginId(), a.volumeId(), a.nodeId()))) {
      throw new IllegalArgumentException("its value is the attachment of " + a.pluginId() + "/" + a.volumeId()
          + " to node " + a.nodeId() + ", which is not what its key says");
    }
    return a;
  }

  AutoCloseable watchChanges(Runnable changed) {
    Objects.requireNonNull(changed, "changed");
    VolumesInformer mirror = new VolumesInformer(ops.client, keys, snapshotRoots(), this::decodeSnapshot, changed,
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
}
