package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.DeleteRangeRequest;
import dev.csisupervisor.catalog.etcdpb.PutRequest;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.util.function.Supplier;

/**
 * The cluster volumes' way to etcd: one client, each call tried on every endpoint once (failing over after an
 * error), and the compares and operations their transactions are made of, each written once. Thread-safe.
 */
final class EtcdOps {
  /** etcd's default --max-txn-ops: the most operations one transaction may carry. */
  static final int MAX_TXN_OPS = 128;

  final EtcdClient client;
  final CatalogKeys keys;

  EtcdOps(EtcdClient client, CatalogKeys keys) {
    this.client = client;
    this.keys = keys;
  }

  /**
   * Runs {@code op}, moving to the next endpoint after a failure, each endpoint once. An answer of the cluster
   * ({@link #isAnswer}: a denied or invalid request, a failed precondition, ...) is thrown at once: every member
   * gives the same, and a failover shuts the channel down under every stream on it — the election lease's
   * keep-alive first, which then took the lease for lost and campaigned again after one denied request.
   */
  <T> T call(Supplier<T> op) {
    EtcdException first = null;
    int endpoints = client.options().endpoints().size();
    for (int i = 0; i < endpoints; i++) {
      try {
        return op.get();
      } catch (EtcdException e) {
        if ("CLOSED".equals(e.code()) || isAnswer(e)) {
          throw e;
        }
        if (first == null) {
          first = e;
        } else {
          first.addSuppressed(e);
        }
        client.failover();
      }
    }
    throw first;
  }

  /** Whether {@code e} is an answer of a live member that another endpoint would give too. */
  static boolean isAnswer(EtcdException e) {
    return switch (e.code()) {
      case "PERMISSION_DENIED", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "OUT_OF_RANGE",
          "ALREADY_EXISTS", "RESOURCE_EXHAUSTED", "UNAUTHENTICATED", "UNIMPLEMENTED" -> true;
      default -> false;
    };
  }

  TxnResponse txn(TxnRequest t) {
    return call(() -> client.txn(t));
  }

  /** The registered volume, if there is one. */
  java.util.Optional<ClusterVolume> volume(String pluginId, String volumeId) {
    String key = keys.volumeKey(pluginId, volumeId);
    var r = call(() -> client.range(dev.csisupervisor.catalog.etcdpb.RangeRequest.newBuilder().setKey(bytes(key))
        .build()));
    return r.getKvsCount() == 0 ? java.util.Optional.empty()
        : java.util.Optional.of(VolumeCodec.decodeVolume(r.getKvs(0).getValue()));
  }

  static ByteString bytes(String s) {
    return EtcdClient.bytes(s);
  }

  /** The key does not exist. */
  static Compare absent(String key) {
    return Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.CREATE)
        .setResult(Compare.CompareResult.EQUAL).setCreateRevision(0).build();
  }

  /** The key exists. */
  static Compare present(String key) {
    return Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.CREATE)
        .setResult(Compare.CompareResult.GREATER).setCreateRevision(0).build();
  }

  /** The key's mod revision is {@code revision} (0: it does not exist). */
  static Compare modIs(String key, long revision) {
    return Compare.newBuilder().setKey(bytes(key)).setTarget(Compare.CompareTarget.MOD)
        .setResult(Compare.CompareResult.EQUAL).setModRevision(revision).build();
  }

  /** No key under {@code prefix} (a range compare: an empty range compares as a zero key). */
  static Compare none(String prefix) {
    return Compare.newBuilder().setKey(bytes(prefix)).setRangeEnd(EtcdClient.prefixEnd(bytes(prefix)))
        .setTarget(Compare.CompareTarget.CREATE).setResult(Compare.CompareResult.EQUAL).setCreateRevision(0).build();
  }

  /** At least one key under {@code prefix} (every key there was created; an empty range compares as a zero key). */
  static Compare some(String prefix) {
    return Compare.newBuilder().setKey(bytes(prefix)).setRangeEnd(EtcdClient.prefixEnd(bytes(prefix)))
        .setTarget(Compare.CompareTarget.CREATE).setResult(Compare.CompareResult.GREATER).setCreateRevision(0).build();
  }

  /** No key under {@code prefix} was put or created after {@code revision} (deletes are not seen by a compare). */
  static Compare unchangedSince(String prefix, long revision) {
    return Compare.newBuilder().setKey(bytes(prefix)).setRangeEnd(EtcdClient.prefixEnd(bytes(prefix)))
        .setTarget(Compare.CompareTarget.MOD).setResult(Compare.CompareResult.LESS).setModRevision(revision + 1)
        .build();
  }

  static RequestOp range(String key) {
    return RequestOp.newBuilder().setRequestRange(RangeRequest.newBuilder().setKey(bytes(key))).build();
  }

  static RequestOp rangePrefix(String prefix, long limit) {
    return RequestOp.newBuilder().setRequestRange(RangeRequest.newBuilder().setKey(bytes(prefix))
        .setRangeEnd(EtcdClient.prefixEnd(bytes(prefix))).setLimit(limit)).build();
  }

  static RequestOp put(String key, ByteString value, long lease) {
    return RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder().setKey(bytes(key)).setValue(value)
        .setLease(lease)).build();
  }

  static RequestOp delete(String key) {
    return RequestOp.newBuilder().setRequestDeleteRange(DeleteRangeRequest.newBuilder().setKey(bytes(key))).build();
  }

  static RequestOp deletePrefix(String prefix) {
    return RequestOp.newBuilder().setRequestDeleteRange(DeleteRangeRequest.newBuilder().setKey(bytes(prefix))
        .setRangeEnd(EtcdClient.prefixEnd(bytes(prefix)))).build();
  }

  /** Why a value does not read ({@code decode} throwing IllegalArgumentException); empty if it reads. */
  static java.util.Optional<String> problem(Runnable decode) {
    try {
      decode.run();
      return java.util.Optional.empty();
    } catch (IllegalArgumentException e) {
      return java.util.Optional.of(String.valueOf(e.getMessage()));
    }
  }

  /** Runs {@code decode}; a value that does not read is skipped, with a warning naming its key. */
  static void decodeOrSkip(dev.csisupervisor.catalog.etcdpb.KeyValue kv, Runnable decode) {
    try {
      decode.run();
    } catch (IllegalArgumentException e) {
      org.slf4j.LoggerFactory.getLogger(EtcdOps.class).warn("cluster volumes: skipping {}: {}",
          kv.getKey().toStringUtf8(), e.getMessage());
    }
  }
}
