package dev.csisupervisor.catalog;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.RangeResponse;
import java.util.HashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reading the catalog out of etcd: the whole prefix at one revision, page by page, each key decoded and
 * checked against its value (a key that does not read is skipped and logged, never guessed at). The view's
 * list and the CLI's one-time read ({@link ClusterView#read}) both come here.
 */
final class CatalogListing {
  private static final Logger log = LoggerFactory.getLogger(CatalogListing.class);
  private static final int RANGE_PAGE = 1000;

  private CatalogListing() {}

  /**
   * One list of the prefix, tried on each member in turn with the quorum's agreement (a linearizable read);
   * when none can give that and {@code allowStale}, one member's own copy (a serializable read), marked stale.
   */
  static ClusterRead read(EtcdOptions etcd, CatalogKeys keys, boolean allowStale, java.time.Clock clock) {
    try (EtcdClient c = new EtcdClient(etcd)) {
      EtcdException first = null;
      for (boolean serializable : allowStale ? new boolean[] {false, true} : new boolean[] {false}) {
        for (int i = 0; i < etcd.endpoints().size(); i++) {
          try {
            Map<String, CatalogEntry> p = new HashMap<>();
            Map<String, NodeEntry> n = new HashMap<>();
            long rev = list(c, keys, p, n, serializable);
            ClusterSnapshot s = ClusterSnapshot.of(rev, n.values(), p.values());
            String endpoint = c.endpoint().toString();
            return new ClusterRead(s, serializable
                ? new ViewFreshness(rev, null, true, null, endpoint, first.getMessage())
                : new ViewFreshness(rev, clock.instant(), false, null, endpoint, first == null ? "" : first.getMessage()));
          } catch (EtcdException e) {
            if (first == null) {
              first = e;
            } else {
              first.addSuppressed(e);
            }
            c.failover();
          }
        }
      }
      throw first;
    }
  }

  /** The entry at {@code nodeId}'s node key, if there is one that reads (one linearizable read). */
  static java.util.Optional<NodeEntry> node(EtcdOptions etcd, CatalogKeys keys, String nodeId) {
    try (EtcdClient c = new EtcdClient(etcd)) {
      RangeResponse r = c.range(RangeRequest.newBuilder().setKey(EtcdClient.bytes(keys.nodeKey(nodeId))).build());
      if (r.getKvsCount() == 0) {
        return java.util.Optional.empty();
      }
      try {
        return java.util.Optional.of(CatalogCodec.decodeNode(r.getKvs(0).getValue()));
      } catch (IllegalArgumentException e) {
        return java.util.Optional.empty();
      }
    }
  }

  /** Lists the whole prefix at one revision into the maps; returns that revision. */
  static long list(EtcdClient c, CatalogKeys keys, Map<String, CatalogEntry> p, Map<String, NodeEntry> n,
      boolean serializable) {
    ByteString from = EtcdClient.bytes(keys.root());
    ByteString end = EtcdClient.prefixEnd(from);
    long rev = 0;
    while (true) {
      RangeRequest.Builder rq = RangeRequest.newBuilder().setKey(from).setRangeEnd(end).setLimit(RANGE_PAGE)
          .setSerializable(serializable);
      if (rev != 0) {
        rq.setRevision(rev);
      }
      RangeResponse r = c.range(rq.build());
      if (rev == 0) {
        rev = r.getHeader().getRevision();
      }
      for (KeyValue kv : r.getKvsList()) {
        decode(keys, kv, p, n);
      }
      if (!r.getMore() || r.getKvsCount() == 0) {
        return rev;
      }
      from = r.getKvs(r.getKvsCount() - 1).getKey().concat(ByteString.copyFrom(new byte[] {0}));
    }
  }

  static boolean decode(CatalogKeys keys, KeyValue kv, Map<String, CatalogEntry> p, Map<String, NodeEntry> n) {
    String key = kv.getKey().toStringUtf8();
    try {
      var path = keys.parsePluginKey(key);
      if (path.isPresent()) {
        CatalogEntry e = CatalogCodec.decodeEntry(kv.getValue());
        if (!e.nodeId().equals(path.get().nodeId()) || !e.name().equals(path.get().key().name())
            || e.type() != path.get().key().type() || !e.allocId().equals(path.get().key().allocId())) {
          throw new IllegalArgumentException("value does not match its key");
        }
        p.put(key, e);
        return true;
      }
      var node = keys.parseNodeKey(key);
      if (node.isPresent()) {
        NodeEntry e = CatalogCodec.decodeNode(kv.getValue());
        if (!e.nodeId().equals(node.get())) {
          throw new IllegalArgumentException("value does not match its key");
        }
        n.put(key, e);
        return true;
      }
    } catch (IllegalArgumentException e) {
      log.warn("cluster view: skipping {}: {}", key, e.getMessage());
    }
    return false;
  }
}
