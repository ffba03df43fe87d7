package dev.csisupervisor.catalog;

import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import java.util.LinkedHashMap;
import java.util.Map;

/** For tests: every key and value under a prefix, as text (what an operator with etcdctl would see). */
public final class EtcdDump {
  private EtcdDump() {}

  public static Map<String, String> under(EtcdOptions etcd, String prefix) {
    try (EtcdClient client = new EtcdClient(etcd)) {
      RangeRequest r = RangeRequest.newBuilder().setKey(EtcdClient.bytes(prefix))
          .setRangeEnd(EtcdClient.prefixEnd(EtcdClient.bytes(prefix))).build();
      Map<String, String> out = new LinkedHashMap<>();
      for (KeyValue kv : client.range(r).getKvsList()) {
        out.put(kv.getKey().toStringUtf8(), kv.getValue().toStringUtf8());
      }
      return out;
    }
  }
}
