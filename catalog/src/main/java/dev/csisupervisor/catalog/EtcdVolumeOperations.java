package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.absent;
import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.modIs;
import static dev.csisupervisor.catalog.EtcdOps.present;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;
import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.ClusterVolumeRequest.Kind;
import dev.csisupervisor.catalog.ClusterVolumeRequest.State;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The requests beside create and delete ({@link ClusterVolumeRequest.Kind}: snapshot, snapshot-delete, modify,
 * register) and what a create from a source needs: each asked in one transaction that checks what it acts on (the
 * source volume registered and not being deleted, the snapshot recorded and not being deleted, a register's volume not
 * registered), and completed by the controller agent in one transaction with the record it changes. Thread-safe.
 */
final class EtcdVolumeOperations {
  private static final Logger log = LoggerFactory.getLogger(EtcdVolumeOperations.class);

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final EtcdAttachments attachments;

  EtcdVolumeOperations(EtcdOps ops, EtcdAttachments attachments) {
    this.ops = ops;
    this.keys = ops.keys;
    this.attachments = attachments;
  }

  /** A precondition of asking: a compare, and what it means when it fails. */
  private record Condition(Compare compare, String key, boolean mustExist, String unmet) {}

  /** What a request needs to stand while it is asked. */
  private List<Condition> conditions(ClusterVolumeRequest r) {
    String plugin = r.pluginId();
    List<Condition> out = new ArrayList<>();
    Optional<VolumeSource> source = r.spec().source();
    if (r.kind() == Kind.MODIFY) {
      source = Optional.of(VolumeSource.volume(r.name()));
    }
    if (source.isPresent() && source.get().type() == VolumeSource.Type.VOLUME) {
      String id = source.get().id();
      String volume = keys.volumeKey(plugin, id);
      String deleting = keys.requestKey(Kind.DELETE, plugin, id);
      out.add(new Condition(present(volume), volume, true, "volume " + id + " of plugin " + plugin
          + " is not registered"));
      out.add(new Condition(absent(deleting), deleting, false, "volume " + id + " of plugin " + plugin
          + " is being deleted (" + r.kind().segment() + " refused)"));
    }
    if (source.isPresent() && source.get().type() == VolumeSource.Type.SNAPSHOT) {
      String id = source.get().id();
      String snapshot = keys.snapshotKey(plugin, id);
      String deleting = keys.requestKey(Kind.SNAPSHOT_DELETE, plugin, id);
      out.add(new Condition(present(snapshot), snapshot, true, "snapshot " + id + " of plugin " + plugin
          + " is not recorded (csi-agent cluster volume snapshot list " + plugin + ")"));
      out.add(new Condition(absent(deleting), deleting, false, "snapshot " + id + " of plugin " + plugin
          + " is being deleted"));
    }
    if (r.kind() == Kind.REGISTER) {
      String volume = keys.volumeKey(plugin, r.name());
      out.add(new Condition(absent(volume), volume, false, "volume " + r.name() + " of plugin " + plugin
          + " is registered already (deregister it first)"));
    }
    return out;
  }

  /**
   * Asks a create, snapshot, modify or register: written if its key has none; the stored one if it asks the same;
   * a failed, cancelled or spent one (done, and what it made is gone; a done modify or register) is replaced.
   */
  ClusterVolumeRequest ask(ClusterVolumeRequest request) throws VolumeStateException {
    if (request.kind() == Kind.DELETE || request.kind() == Kind.SNAPSHOT_DELETE
        || request.state() != State.PENDING || request.attempts() != 0) {
      throw new IllegalArgumentException("request must be a new create, snapshot, modify or register, got "
          + request.kind() + " " + request.state());
    }
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    List<Condition> conditions = conditions(request);
    for (int round = 1; round <= EtcdClaims.MAX_CLAIM_ROUNDS; round++) {
      TxnRequest.Builder t = TxnRequest.newBuilder().addCompare(absent(key))
          .addSuccess(put(key, VolumeCodec.encode(request), 0)).addFailure(range(key));
      conditions.forEach(c -> t.addCompare(c.compare()).addFailure(range(c.key())));
      TxnResponse r = ops.txn(t.build());
      if (r.getSucceeded()) {
        log.info("{} asked", request.describe());
        return request.withRevision(r.getHeader().getRevision());
      }
      for (int i = 0; i < conditions.size(); i++) {
        Condition c = conditions.get(i);
        boolean exists = r.getResponses(i + 1).getResponseRange().getKvsCount() > 0;
        if (exists != c.mustExist()) {
          throw new VolumeStateException(request.describe() + " refused: " + c.unmet());
        }
      }
      List<KeyValue> kvs = r.getResponses(0).getResponseRange().getKvsList();
      if (kvs.isEmpty()) {
        continue; // withdrawn, or a condition changed, in between
      }
      ClusterVolumeRequest existing = VolumeCodec.decodeRequest(kvs.get(0).getValue(), kvs.get(0).getModRevision());
      if (existing.asksSameAs(request) && existing.state() != State.FAILED && existing.state() != State.CANCELLED
          && !spent(existing)) {
        return existing;
      }
      if (existing.state() == State.PENDING && !existing.asksSameAs(request)) {
        throw new VolumeStateException(request.describe() + " refused: " + existing.describe() + " is pending "
            + "with other content (" + describeAsk(existing) + ")" + (request.kind() == Kind.MODIFY
            ? ": one modify per volume at a time; wait for it, or cancel it" : "; cancel it first, or use another name"));
      }
      if (existing.state() == State.DONE && !spent(existing)) {
        throw new VolumeStateException(request.describe() + " refused: it is done already with other content ("
            + describeAsk(existing) + ", made " + existing.volumeId() + "); delete that first, or use another name");
      }
      // Failed, cancelled, or done and spent: asked afresh.
      TxnRequest.Builder again = TxnRequest.newBuilder().addCompare(modIs(key, existing.revision()))
          .addSuccess(put(key, VolumeCodec.encode(request), 0));
      conditions.forEach(c -> again.addCompare(c.compare()));
      TxnResponse a = ops.txn(again.build());
      if (a.getSucceeded()) {
        log.info("{} asked again (it was {}{})", request.describe(), existing.state(),
            existing.message().isEmpty() ? "" : ": " + existing.message());
        return request.withRevision(a.getHeader().getRevision());
      }
    }
    throw new EtcdException(request.describe() + ": the request kept changing", "CONTENTION", null);
  }

  /** Whether a done request no longer stands for anything: its volume or snapshot gone, or a modify or register. */
  private boolean spent(ClusterVolumeRequest r) {
    if (r.state() != State.DONE) {
      return false;
    }
    return switch (r.kind()) {
      case CREATE -> ops.volume(r.pluginId(), r.volumeId()).isEmpty();
      case SNAPSHOT -> snapshot(r.pluginId(), r.volumeId()).isEmpty();
      default -> true;
    };
  }

  private static String describeAsk(ClusterVolumeRequest r) {
    ClusterVolumeRequest.Spec s = r.spec();
    List<String> parts = new ArrayList<>();
    s.source().ifPresent(f -> parts.add("from " + f));
    if (!s.parameters().isEmpty()) {
      parts.add("parameters " + s.parameters());
    }
    if (!s.mutableParameters().isEmpty()) {
      parts.add("mutable parameters " + s.mutableParameters());
    }
    if (s.requiredBytes() > 0) {
      parts.add(s.requiredBytes() + " bytes");
    }
    if (!s.accessModes().isEmpty()) {
      parts.add("access " + s.accessModes());
    }
    return parts.isEmpty() ? r.kind().segment() : String.join(", ", parts);
  }

  /** A recorded snapshot, read from etcd. */
  Optional<ClusterVolumeSnapshot> snapshot(String pluginId, String snapshotId) {
    String key = keys.snapshotKey(pluginId, snapshotId);
    TxnResponse r = ops.txn(TxnRequest.newBuilder().addSuccess(range(key)).build());
    List<KeyValue> kvs = r.getResponses(0).getResponseRange().getKvsList();
    return kvs.isEmpty() ? Optional.empty() : Optional.of(VolumeCodec.decodeSnapshot(kvs.get(0).getValue()));
  }

  /**
   * Asks a snapshot's delete: only while it is recorded and no pending create is made from it (read, then compared
   * unchanged); a failed one is asked again, a pending one returned.
   *
   * @return empty if the snapshot is not recorded
   */
  Optional<ClusterVolumeRequest> requestSnapshotDelete(ClusterVolumeRequest request) throws VolumeStateException {
    if (request.kind() != Kind.SNAPSHOT_DELETE || request.state() != State.PENDING) {
      throw new IllegalArgumentException("request must be a new snapshot-delete, got " + request.kind() + " "
          + request.state());
    }
    String plugin = request.pluginId();
    String id = request.name();
    String key = keys.requestKey(Kind.SNAPSHOT_DELETE, plugin, id);
    String snapshot = keys.snapshotKey(plugin, id);
    String creates = keys.requestsPrefix(Kind.CREATE, plugin);
    for (int round = 1; round <= EtcdClaims.MAX_CLAIM_ROUNDS; round++) {
      TxnResponse read = ops.txn(TxnRequest.newBuilder().addSuccess(range(snapshot)).addSuccess(rangePrefix(creates, 0))
          .addSuccess(range(key)).addSuccess(rangePrefix(keys.requestsPrefix(Kind.SNAPSHOT, plugin), 0)).build());
      if (read.getResponses(0).getResponseRange().getKvsCount() == 0) {
        return Optional.empty();
      }
      for (KeyValue kv : read.getResponses(3).getResponseRange().getKvsList()) {
        ClusterVolumeRequest cut = VolumeCodec.decodeRequest(kv.getValue(), kv.getModRevision());
        if (cut.state() == State.PENDING && cut.volumeId().equals(id)) {
          throw new VolumeStateException(request.describe() + " refused: it is not ready yet (" + cut.describe()
              + " pending: " + cut.message() + "); cancel that instead (csi-agent cluster volume cancel snapshot "
              + plugin + " " + cut.name() + "): what it cut is deleted");
        }
      }
      List<String> from = new ArrayList<>();
      for (KeyValue kv : read.getResponses(1).getResponseRange().getKvsList()) {
        EtcdOps.decodeOrSkip(kv, () -> {
          ClusterVolumeRequest c = VolumeCodec.decodeRequest(kv.getValue(), kv.getModRevision());
          if (c.state() != State.DONE && c.state() != State.FAILED
              && c.spec().source().equals(Optional.of(VolumeSource.snapshot(id)))) {
            from.add(c.describe() + " (" + c.state() + ")");
          }
        });
      }
      if (!from.isEmpty()) {
        throw new VolumeStateException(request.describe() + " refused: a volume is being made from it: "
            + String.join("; ", from) + ". Wait for it, or cancel it first");
      }
      TxnResponse r = ops.txn(TxnRequest.newBuilder().addCompare(present(snapshot))
          .addCompare(EtcdOps.unchangedSince(creates, read.getHeader().getRevision())).addCompare(absent(key))
          .addSuccess(put(key, VolumeCodec.encode(request), 0)).build());
      if (r.getSucceeded()) {
        log.info("{} asked", request.describe());
        return Optional.of(request.withRevision(r.getHeader().getRevision()));
      }
      List<KeyValue> kvs = read.getResponses(2).getResponseRange().getKvsList();
      if (kvs.isEmpty()) {
        continue;
      }
      ClusterVolumeRequest existing = VolumeCodec.decodeRequest(kvs.get(0).getValue(), kvs.get(0).getModRevision());
      if (existing.state() != State.FAILED) {
        return Optional.of(existing);
      }
      if (ops.txn(TxnRequest.newBuilder().addCompare(modIs(key, existing.revision()))
          .addCompare(EtcdOps.unchangedSince(creates, read.getHeader().getRevision()))
          .addSuccess(put(key, VolumeCodec.encode(request), 0)).build()).getSucceeded()) {
        log.info("{} asked again (it had failed: {})", request.describe(), existing.message());
        return Optional.of(request.withRevision(read.getHeader().getRevision()));
      }
    }
    throw new EtcdException(request.describe() + ": the request kept changing", "CONTENTION", null);
  }

  /**
   * The pending requests (read in {@code response}) made from a volume: snapshots cut from it, clones of it (what a
   * delete of it must wait for), described.
   */
  List<String> pendingFrom(TxnResponse read, int response, String volumeId) {
    List<String> out = new ArrayList<>();
    for (KeyValue kv : read.getResponses(response).getResponseRange().getKvsList()) {
      EtcdOps.decodeOrSkip(kv, () -> {
        ClusterVolumeRequest s = VolumeCodec.decodeRequest(kv.getValue(), kv.getModRevision());
        if ((s.state() == State.PENDING || s.state() == State.CANCELLED)
            && s.spec().source().equals(Optional.of(VolumeSource.volume(volumeId)))) {
          out.add(s.describe() + " (" + s.state() + (s.message().isEmpty() ? "" : ": " + s.message()) + ")");
        }
      });
    }
    return out;
  }

  private TxnRequest.Builder asLeader(ClusterVolumes.Leadership l, ClusterVolumeRequest request) {
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    return TxnRequest.newBuilder().addCompare(attachments.held(l)).addCompare(modIs(key, request.revision()));
  }

  /**
   * As the controller agent, after CreateSnapshot answered: the snapshot recorded (ready or not) and the request
   * written as {@code to} (done when ready; else pending, sent again later), in one transaction.
   *
   * @return {@code to} as stored, or empty if nothing was written (leadership gone or the request changed)
   */
  Optional<ClusterVolumeRequest> recordSnapshot(ClusterVolumes.Leadership l, ClusterVolumeRequest request,
      ClusterVolumeSnapshot snapshot, ClusterVolumeRequest to) {
    String key = keys.requestKey(request.kind(), request.pluginId(), request.name());
    TxnResponse r = ops.txn(asLeader(l, request)
        .addSuccess(put(keys.snapshotKey(snapshot.pluginId(), snapshot.snapshotId()), VolumeCodec.encode(snapshot), 0))
        .addSuccess(put(key, VolumeCodec.encode(to), 0)).build());
    return r.getSucceeded() ? Optional.of(to.withRevision(r.getHeader().getRevision())) : Optional.empty();
  }

  /**
   * As the controller agent, after DeleteSnapshot succeeded (or NOT_FOUND): the snapshot's record, the request and the
   * done snapshot request that cut it removed, in one transaction.
   */
  boolean completeSnapshotDelete(ClusterVolumes.Leadership l, ClusterVolumeRequest request) {
    TxnRequest.Builder t = asLeader(l, request).addSuccess(delete(keys.snapshotKey(request.pluginId(), request.name())))
        .addSuccess(delete(keys.requestKey(request.kind(), request.pluginId(), request.name())));
    doneRequestsMaking(Kind.SNAPSHOT, request.pluginId(), request.name()).forEach(k -> t.addSuccess(delete(k)));
    return ops.txn(t.build()).getSucceeded();
  }

  /** The keys of the done requests of {@code kind} that made {@code id} (a create's volume, a snapshot's id). */
  List<String> doneRequestsMaking(Kind kind, String pluginId, String id) {
    TxnResponse made = ops.txn(TxnRequest.newBuilder().addSuccess(rangePrefix(keys.requestsPrefix(kind, pluginId), 0))
        .build());
    List<String> out = new ArrayList<>();
    for (KeyValue kv : made.getResponses(0).getResponseRange().getKvsList()) {
      EtcdOps.decodeOrSkip(kv, () -> {
        ClusterVolumeRequest c = VolumeCodec.decodeRequest(kv.getValue(), kv.getModRevision());
        if (c.state() == State.DONE && c.volumeId().equals(id)) {
          out.add(kv.getKey().toStringUtf8());
        }
      });
    }
    return out;
  }

  /**
   * As the controller agent, after ControllerModifyVolume succeeded: the volume's record with the parameters merged
   * and the request done, in one transaction (the record compared unchanged since {@code volumeRevision}).
   *
   * @return false if nothing was written (leadership, the request or the record changed)
   */
  boolean completeModify(ClusterVolumes.Leadership l, ClusterVolumeRequest request, ClusterVolume modified,
      long volumeRevision) {
    String volumeKey = keys.volumeKey(modified.pluginId(), modified.volumeId());
    return ops.txn(asLeader(l, request).addCompare(modIs(volumeKey, volumeRevision))
        .addSuccess(put(volumeKey, VolumeCodec.encode(modified), 0))
        .addSuccess(put(keys.requestKey(request.kind(), request.pluginId(), request.name()),
            VolumeCodec.encode(request.done(request.name())), 0)).build()).getSucceeded();
  }

  /** The registered volume and its mod revision, if registered. */
  Optional<Revisioned<ClusterVolume>> volumeAt(String pluginId, String volumeId) {
    String key = keys.volumeKey(pluginId, volumeId);
    TxnResponse r = ops.txn(TxnRequest.newBuilder().addSuccess(range(key)).build());
    List<KeyValue> kvs = r.getResponses(0).getResponseRange().getKvsList();
    return kvs.isEmpty() ? Optional.empty()
        : Optional.of(new Revisioned<>(VolumeCodec.decodeVolume(kvs.get(0).getValue()), kvs.get(0).getModRevision()));
  }

  /** A value and the mod revision it was read at. */
  record Revisioned<T>(T value, long revision) {}

  /**
   * As the controller agent, once validated (or not validatable): the volume written, only if not registered, and the
   * request done, in one transaction.
   *
   * @return false if nothing was written
   * @throws VolumeStateException if the volume is registered already (by another register) with other content
   */
  boolean completeRegister(ClusterVolumes.Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    String volumeKey = keys.volumeKey(volume.pluginId(), volume.volumeId());
    ByteString done = VolumeCodec.encode(request.done(volume.volumeId()));
    TxnResponse r = ops.txn(asLeader(l, request).addCompare(absent(volumeKey))
        .addSuccess(put(volumeKey, VolumeCodec.encode(volume), 0))
        .addSuccess(put(keys.requestKey(request.kind(), request.pluginId(), request.name()), done, 0))
        .addFailure(range(volumeKey)).build());
    if (r.getSucceeded()) {
      log.info("{} done: volume registered{}", request.describe(), volume.validated() ? "" : " (not validated)");
      return true;
    }
    if (r.getResponses(0).getResponseRange().getKvsCount() > 0) {
      throw new VolumeStateException(request.describe() + " refused: volume " + volume.volumeId()
          + " was registered meanwhile");
    }
    return false;
  }

  /**
   * As the controller agent, once what a cancelled request made is deleted (or it made nothing): the request removed,
   * with the snapshot's record if one was written, in one transaction.
   */
  boolean completeCancel(ClusterVolumes.Leadership l, ClusterVolumeRequest request, Optional<String> madeSnapshot) {
    TxnRequest.Builder t = asLeader(l, request)
        .addSuccess(delete(keys.requestKey(request.kind(), request.pluginId(), request.name())));
    madeSnapshot.ifPresent(id -> t.addSuccess(delete(keys.snapshotKey(request.pluginId(), id))));
    return ops.txn(t.build()).getSucceeded();
  }
}
