package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.delete;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;
import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;

import com.google.protobuf.ByteString;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RequestOp;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.common.CsiIds;
import dev.csisupervisor.registry.PluginType;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiPredicate;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link ControllerReadings} in etcd: each write reads the plugin id's keys of its kind, then puts what changed and
 * deletes what went in one transaction conditional on the election key ({@link EtcdAttachments#held}); with nothing
 * changed, one read and no write. Thread-safe.
 */
final class EtcdControllerReadings implements ControllerReadings {
  private static final Logger log = LoggerFactory.getLogger(EtcdControllerReadings.class);

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final EtcdAttachments attachments;

  EtcdControllerReadings(EtcdOps ops, EtcdAttachments attachments) {
    this.ops = ops;
    this.keys = ops.keys;
    this.attachments = attachments;
  }

  private List<KeyValue> list(String prefix) {
    return ops.txn(TxnRequest.newBuilder().addSuccess(rangePrefix(prefix, 0)).build()).getResponses(0)
        .getResponseRange().getKvsList();
  }

  @Override
  public Map<String, VolumeCondition> conditions(String pluginId) {
    Map<String, VolumeCondition> out = new TreeMap<>();
    for (KeyValue kv : list(keys.conditionsPrefix(pluginId))) {
      EtcdOps.decodeOrSkip(kv, () -> {
        VolumeCondition c = ReadingsCodec.decodeCondition(kv.getValue());
        out.put(c.volumeId(), c);
      });
    }
    return Collections.unmodifiableMap(out);
  }

  @Override
  public Optional<ControllerLeaks> leaks(String pluginId) {
    String key = keys.leaksKey(pluginId);
    List<KeyValue> kvs = ops.txn(TxnRequest.newBuilder().addSuccess(range(key)).build()).getResponses(0)
        .getResponseRange().getKvsList();
    List<ControllerLeaks> out = new ArrayList<>();
    kvs.forEach(kv -> EtcdOps.decodeOrSkip(kv, () -> out.add(ReadingsCodec.decodeLeaks(kv.getValue()))));
    return out.stream().findFirst();
  }

  @Override
  public List<CapacityReading> capacity(String pluginId) {
    List<CapacityReading> out = new ArrayList<>();
    for (KeyValue kv : list(keys.capacityPrefix(pluginId))) {
      EtcdOps.decodeOrSkip(kv, () -> out.add(ReadingsCodec.decodeCapacity(kv.getValue())));
    }
    return List.copyOf(out);
  }

  @Override
  public List<CatalogEntry> nodePluginsOf(String pluginId) {
    CsiIds.checkPlugin("pluginId", pluginId);
    List<CatalogEntry> out = new ArrayList<>();
    for (KeyValue kv : list(keys.pluginEntriesPrefix(PluginType.CSI_NODE, pluginId))) {
      EtcdOps.decodeOrSkip(kv, () -> out.add(CatalogCodec.decodeEntry(kv.getValue())));
    }
    return List.copyOf(out);
  }

  @Override
  public Set<String> snapshotRecordIds(String pluginId) {
    String prefix = keys.snapshotRecordsPrefix(pluginId);
    Set<String> out = new TreeSet<>();
    for (KeyValue kv : list(prefix)) {
      String rest = kv.getKey().toStringUtf8().substring(prefix.length());
      try {
        out.add(CatalogKeys.unescape(rest));
      } catch (IllegalArgumentException e) {
        log.warn("cluster volumes: skipping snapshot record {}: {}", kv.getKey().toStringUtf8(), e.getMessage());
      }
    }
    return Collections.unmodifiableSet(out);
  }

  @Override
  public int writeConditions(ControllerElection.Leadership l, String pluginId, Collection<VolumeCondition> now) {
    CsiIds.checkPlugin("pluginId", pluginId);
    Map<String, VolumeCondition> wanted = keyed(pluginId, now, "conditions", VolumeCondition::pluginId,
        c -> keys.conditionKey(pluginId, c.volumeId()), c -> ".volumeId " + c.volumeId());
    return write(l, "conditions of plugin " + pluginId, keys.conditionsPrefix(pluginId), wanted,
        ReadingsCodec::decodeCondition, VolumeCondition::sameAs, ReadingsCodec::encode);
  }

  @Override
  public int writeLeaks(ControllerElection.Leadership l, ControllerLeaks leaks) {
    if (leaks == null) {
      throw new IllegalArgumentException("leaks must not be null");
    }
    String key = keys.leaksKey(leaks.pluginId());
    Map<String, ControllerLeaks> wanted = leaks.isEmpty() ? Map.of() : Map.of(key, leaks);
    // The leaks key is the one key of its prefix-free range: read it alone (the key itself as the "prefix" would also
    // match a plugin id it is a prefix of).
    return write(l, "leaks of plugin " + leaks.pluginId(), key, wanted, ReadingsCodec::decodeLeaks,
        ControllerLeaks::sameAs, ReadingsCodec::encode);
  }

  @Override
  public int writeCapacity(ControllerElection.Leadership l, String pluginId, Collection<CapacityReading> now) {
    CsiIds.checkPlugin("pluginId", pluginId);
    Map<String, CapacityReading> wanted = keyed(pluginId, now, "readings", CapacityReading::pluginId,
        r -> keys.capacityKey(pluginId, r.segmentKey()), r -> ".topology " + r.topology());
    return write(l, "capacity of plugin " + pluginId, keys.capacityPrefix(pluginId), wanted,
        ReadingsCodec::decodeCapacity, CapacityReading::sameAs, ReadingsCodec::encode);
  }

  /**
   * {@code values} by key, each checked: not null, of {@code pluginId}, one per key.
   *
   * @throws IllegalArgumentException naming {@code field[i]}
   */
  private static <T> Map<String, T> keyed(String pluginId, Collection<T> values, String field,
      Function<T, String> plugin, Function<T, String> key, Function<T, String> what) {
    if (values == null) {
      throw new IllegalArgumentException(field + " must not be null");
    }
    Map<String, T> out = new TreeMap<>();
    int i = 0;
    for (T v : values) {
      String f = field + "[" + i++ + "]";
      if (v == null) {
        throw new IllegalArgumentException(f + " must not be null");
      }
      if (!plugin.apply(v).equals(pluginId)) {
        throw new IllegalArgumentException(f + ".pluginId must be " + pluginId + ", got " + plugin.apply(v));
      }
      if (out.put(key.apply(v), v) != null) {
        throw new IllegalArgumentException(f + what.apply(v) + " is given twice");
      }
    }
    return out;
  }

  /**
   * Makes the keys under {@code prefix} (or the one key {@code prefix}, for the leaks) {@code wanted}: puts the ones
   * whose value does not say the same, deletes the others; one read, and a write only if something changed.
   */
  private <T> int write(ControllerElection.Leadership l, String what, String prefix, Map<String, T> wanted,
      Function<ByteString, T> decode, BiPredicate<T, T> same, Function<T, ByteString> encode) {
    if (l == null) {
      throw new IllegalArgumentException("leadership must not be null");
    }
    boolean single = !prefix.endsWith("/");
    RequestOp read = single ? range(prefix) : rangePrefix(prefix, 0);
    List<KeyValue> there = ops.txn(TxnRequest.newBuilder().addSuccess(read).build()).getResponses(0)
        .getResponseRange().getKvsList();
    List<RequestOp> changes = new ArrayList<>();
    Set<String> seen = new TreeSet<>();
    for (KeyValue kv : there) {
      String key = kv.getKey().toStringUtf8();
      seen.add(key);
      T want = wanted.get(key);
      if (want == null) {
        changes.add(delete(key));
        continue;
      }
      T had;
      try {
        had = decode.apply(kv.getValue());
      } catch (IllegalArgumentException e) {
        had = null; // unreadable: rewritten
      }
      if (had == null || !same.test(want, had)) {
        changes.add(put(key, encode.apply(want), 0));
      }
    }
    wanted.forEach((key, want) -> {
      if (!seen.contains(key)) {
        changes.add(put(key, encode.apply(want), 0));
      }
    });
    if (changes.isEmpty()) {
      return 0;
    }
    for (int from = 0; from < changes.size(); from += EtcdOps.MAX_TXN_OPS) {
      List<RequestOp> part = changes.subList(from, Math.min(changes.size(), from + EtcdOps.MAX_TXN_OPS));
      if (!ops.txn(TxnRequest.newBuilder().addCompare(attachments.held(l)).addAllSuccess(part).build())
          .getSucceeded()) {
        log.info("cluster controller: {} not written: plugin {}'s election key is no longer this agent's", what,
            l.pluginId());
        return NOT_LEADING;
      }
    }
    log.debug("cluster controller: {}: {} key(s) written", what, changes.size());
    return changes.size();
  }
}
