package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.DeleteRangeRequest;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.PutRequest;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The write path of an {@link EtcdCatalogPublisher}: puts the node key for a connection, reconciles the node's
 * plugin keys with a {@link DesiredImage}, and writes batches of its changes, every write one transaction
 * conditional on the node key's revision as this connection put it. Keys are put under the lease the caller
 * passes.
 *
 * <p>Not thread-safe and takes no lock: only the publisher's io thread calls it, one etcd call at a time.
 * Failures are the {@link EtcdException}s of the etcd calls, thrown as they come: a key whose write is not
 * noted as written (a failed batch, or the batches of a reconcile that failed later) is written again by the
 * next reconcile.
 */
final class CatalogWriter {
  private static final Logger log = LoggerFactory.getLogger(CatalogWriter.class);

  private final EtcdClient client;
  private final CatalogKeys keys;
  private final String nodeId;
  private final int batchSize;
  /** What this publisher last wrote on its current lease, by key: lets a reconcile skip unchanged keys. */
  private final Map<String, ByteString> lastWritten = new HashMap<>();
  /** The lease of a previous run with the same node id, until a reconcile has taken over its keys. */
  private long previousLease;
  /** The node key's mod revision as this connection put it; every write is conditional on it ({@link #write}). */
  private long nodeKeyRevision;

  CatalogWriter(EtcdClient client, CatalogKeys keys, String nodeId, int batchSize) {
    this.client = client;
    this.keys = keys;
    this.nodeId = nodeId;
    this.batchSize = batchSize;
  }

  /** A new lease holds none of this node's keys yet: the next reconcile writes every one. */
  void leaseGranted() {
    lastWritten.clear();
  }

  /**
   * Puts the node key on {@code lease}, and notes the lease of a previous run with this node id (crashed, or
   * restarted within its TTL) whose keys the next reconcile takes over. The put is create-only, or conditional on
   * the node key as read when it is this agent's (its instance token, {@link NodeEntry#heldBy}): a second agent
   * started with the node id of a live one is refused, never taking the node's keys over.
   *
   * @throws NodeIdInUseException if another agent's entry holds the node key
   */
  void putNodeKey(long lease, NodeEntry node) {
    String key = keys.nodeKey(nodeId);
    ByteString value = CatalogCodec.encode(node);
    for (int round = 1; ; round++) {
      TxnResponse created = client.txn(TxnRequest.newBuilder().addCompare(EtcdOps.absent(key))
          .addSuccess(put(lease, key, value)).addFailure(EtcdOps.range(key)).build());
      if (created.getSucceeded()) {
        nodeKeyRevision = created.getHeader().getRevision();
        return;
      }
      List<KeyValue> kvs = created.getResponses(0).getResponseRange().getKvsList();
      if (kvs.isEmpty()) {
        continue; // gone in between: create it again
      }
      KeyValue prev = kvs.get(0);
      NodeEntry holder = holder(prev);
      if (holder != null && !holder.heldBy(node.instance()) && prev.getLease() != lease) {
        throw new NodeIdInUseException(nodeId, holder);
      }
      if (prev.getLease() != 0 && prev.getLease() != lease) {
        previousLease = prev.getLease();
      }
      TxnResponse taken = client.txn(TxnRequest.newBuilder().addCompare(EtcdOps.modIs(key, prev.getModRevision()))
          .addSuccess(put(lease, key, value)).build());
      if (taken.getSucceeded()) {
        nodeKeyRevision = taken.getHeader().getRevision();
        return;
      }
      if (round >= 5) {
        throw new EtcdException("the node key " + key + " kept changing while this agent put it", "CONTENTION", null);
      }
    }
  }

  /** The entry at the node key; null if it does not read (taken over: nobody's in particular). */
  private static NodeEntry holder(KeyValue kv) {
    try {
      return CatalogCodec.decodeNode(kv.getValue());
    } catch (IllegalArgumentException e) {
      log.warn("catalog: the node key {} does not read ({}); taking it over", kv.getKey().toStringUtf8(), e.getMessage());
      return null;
    }
  }

  /**
   * Makes etcd's keys of this node exactly {@code want}. The node's keys are the ones on its lease (and on
   * the lease of a previous run with the same node id, found on the node key): listing them costs the same
   * however large the cluster is. What is missing or stale is put, what the registry no longer has is deleted.
   *
   * @return how many keys were put or deleted
   */
  int reconcile(long lease, Map<String, ByteString> want) {
    List<ByteString> current = client.leaseKeys(lease);
    if (current == null) {
      throw new EtcdException("lease " + Long.toHexString(lease) + " expired", "LEASE_EXPIRED", null);
    }
    Set<String> onLease = ours(current);
    Set<String> existing = new HashSet<>(onLease);
    if (previousLease != 0) {
      List<ByteString> old = client.leaseKeys(previousLease);
      if (old != null) {
        existing.addAll(ours(old));
      }
    }
    List<RequestOp> ops = new ArrayList<>();
    Map<String, ByteString> written = new HashMap<>();
    int deletes = 0;
    int unchanged = 0;
    for (String key : existing) {
      if (!want.containsKey(key)) {
        ops.add(delete(key));
        written.put(key, null);
        deletes++;
      }
    }
    for (Map.Entry<String, ByteString> e : want.entrySet()) {
      if (onLease.contains(e.getKey()) && e.getValue().equals(lastWritten.get(e.getKey()))) {
        unchanged++;
      } else {
        ops.add(put(lease, e.getKey(), e.getValue()));
        written.put(e.getKey(), e.getValue());
      }
    }
    for (int i = 0; i < ops.size(); i += batchSize) {
      write(ops.subList(i, Math.min(ops.size(), i + batchSize)));
    }
    written.forEach((k, v) -> {
      if (v == null) {
        lastWritten.remove(k);
      } else {
        lastWritten.put(k, v);
      }
    });
    previousLease = 0;
    log.info("catalog: node {} reconciled with etcd: {} put, {} deleted, {} unchanged", nodeId, ops.size() - deletes,
        deletes, unchanged);
    return ops.size();
  }

  /** The keys that are this node's plugin keys. */
  private Set<String> ours(List<ByteString> keyList) {
    Set<String> out = new HashSet<>();
    for (ByteString k : keyList) {
      String key = k.toStringUtf8();
      var path = keys.parsePluginKey(key);
      if (path.isPresent() && path.get().nodeId().equals(nodeId)) {
        out.add(key);
      }
    }
    return out;
  }

  /** Writes {@code batch} (at most the batch size) in one transaction. */
  void writeChanges(long lease, List<DesiredImage.Change> batch) {
    List<RequestOp> ops = new ArrayList<>();
    for (DesiredImage.Change c : batch) {
      ops.add(c.value() == null ? delete(c.key()) : put(lease, c.key(), c.value()));
    }
    write(ops);
    for (RequestOp op : ops) {
      if (op.hasRequestPut()) {
        lastWritten.put(op.getRequestPut().getKey().toStringUtf8(), op.getRequestPut().getValue());
      } else {
        lastWritten.remove(op.getRequestDeleteRange().getKey().toStringUtf8());
      }
    }
  }

  /**
   * Writes {@code ops} in one transaction, only if the node key is still as this connection put it. A write
   * whose answer was lost (a stopped member, a dead leader) may yet be applied later, after newer ones; every
   * connection puts the node key again, so such a late write of an earlier connection changes nothing. Its keys
   * are forgotten from {@link #lastWritten}: the reconcile after the failure writes them again, whatever landed.
   * Failing the check ourselves means the node key was written behind our back (a late write of an earlier
   * connection, or another process with this node id): what etcd holds can no longer be trusted, so the
   * publisher reconnects and rewrites every key.
   */
  private void write(List<RequestOp> ops) {
    TxnRequest txn = TxnRequest.newBuilder()
        .addCompare(Compare.newBuilder().setKey(EtcdClient.bytes(keys.nodeKey(nodeId))).setTarget(Compare.CompareTarget.MOD)
            .setResult(Compare.CompareResult.EQUAL).setModRevision(nodeKeyRevision))
        .addAllSuccess(ops).build();
    TxnResponse r;
    try {
      r = client.txn(txn);
    } catch (EtcdException e) {
      for (RequestOp op : ops) {
        lastWritten.remove((op.hasRequestPut() ? op.getRequestPut().getKey() : op.getRequestDeleteRange().getKey()).toStringUtf8());
      }
      throw e;
    }
    if (!r.getSucceeded()) {
      lastWritten.clear();
      throw new EtcdException("etcd " + client.endpoint() + ": node key " + keys.nodeKey(nodeId) + " changed behind the"
          + " publisher's back (a late write of an earlier connection, or another agent with node id " + nodeId
          + "); writing every key again", "NODE_KEY_CHANGED", null);
    }
  }

  private static RequestOp put(long lease, String key, ByteString value) {
    return RequestOp.newBuilder().setRequestPut(PutRequest.newBuilder()
        .setKey(EtcdClient.bytes(key)).setValue(value).setLease(lease)).build();
  }

  private static RequestOp delete(String key) {
    return RequestOp.newBuilder().setRequestDeleteRange(DeleteRangeRequest.newBuilder().setKey(EtcdClient.bytes(key))).build();
  }
}
