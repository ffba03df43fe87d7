package dev.csisupervisor.catalog;

import static dev.csisupervisor.catalog.EtcdOps.absent;
import static dev.csisupervisor.catalog.EtcdOps.deletePrefix;
import static dev.csisupervisor.catalog.EtcdOps.modIs;
import static dev.csisupervisor.catalog.EtcdOps.none;
import static dev.csisupervisor.catalog.EtcdOps.put;
import static dev.csisupervisor.catalog.EtcdOps.range;
import static dev.csisupervisor.catalog.EtcdOps.rangePrefix;
import static dev.csisupervisor.catalog.EtcdOps.some;
import static dev.csisupervisor.catalog.EtcdOps.unchangedSince;

import dev.csisupervisor.catalog.etcdpb.Compare;
import dev.csisupervisor.catalog.etcdpb.KeyValue;
import dev.csisupervisor.catalog.etcdpb.RangeRequest;
import dev.csisupervisor.catalog.etcdpb.TxnRequest;
import dev.csisupervisor.catalog.etcdpb.TxnResponse;
import java.time.Clock;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller agent's writes of attachments, the fence and what it remembers of a plugin id, each one
 * transaction conditional on the election key being still the writer's ({@link #held}) and on what it read being
 * unchanged (the attachment's mod revision; for the fence, the node still gone and its claims as read); and the node
 * side's reads of them: an attachment, and whether the plugin id's controller publishes (from the watch-fed mirror
 * while it is in sync). Thread-safe.
 */
final class EtcdAttachments {
  private static final Logger log = LoggerFactory.getLogger(EtcdAttachments.class);

  private final EtcdOps ops;
  private final CatalogKeys keys;
  private final VolumesReads reads;
  private final String nodeId;
  private final Clock clock;

  EtcdAttachments(EtcdOps ops, VolumesReads reads, String nodeId, Clock clock) {
    this.ops = ops;
    this.keys = ops.keys;
    this.reads = reads;
    this.nodeId = nodeId;
    this.clock = clock;
  }

  /** The election key is still the one {@code l} took. */
  Compare held(ClusterVolumes.Leadership l) {
    return Compare.newBuilder().setKey(EtcdOps.bytes(keys.controllerKey(l.pluginId())))
        .setTarget(Compare.CompareTarget.CREATE).setResult(Compare.CompareResult.EQUAL)
        .setCreateRevision(l.createRevision()).build();
  }

  private String key(ClusterAttachment a) {
    return keys.attachmentKey(a.pluginId(), a.volumeId(), a.nodeId());
  }

  private Optional<ClusterAttachment> written(TxnResponse r, ClusterAttachment a) {
    return r.getSucceeded() ? Optional.of(a.withRevision(r.getHeader().getRevision())) : Optional.empty();
  }

  /**
   * The volume's attachment to {@code node}, read from etcd (not the mirror); a key that does not read is an
   * {@link IllegalStateException} naming the force that removes it.
   */
  Optional<ClusterAttachment> attachment(String pluginId, String volumeId, String node) {
    String key = keys.attachmentKey(pluginId, volumeId, node);
    var r = ops.call(() -> ops.client.range(RangeRequest.newBuilder().setKey(EtcdOps.bytes(key)).build()));
    if (r.getKvsCount() == 0) {
      return Optional.empty();
    }
    try {
      return Optional.of(reads.attachmentAtItsKey(r.getKvs(0)));
    } catch (IllegalArgumentException e) {
      throw new IllegalStateException("the attachment key " + key + " does not read (" + e.getMessage() + "); "
          + "csi-agent cluster volume detach --node " + node + " --force removes it", e);
    }
  }

  /** See {@link VolumeClaims#controllerPublishes}. */
  boolean controllerPublishes(String pluginId) {
    dev.csisupervisor.common.CsiIds.checkPlugin("pluginId", pluginId);
    Optional<KeyValue> mirroredCaps = reads.mirrored(keys.capabilitiesKey(pluginId)).orElse(Optional.empty());
    if (mirroredCaps.isPresent()) {
      return VolumeCodec.decodeCapabilities(mirroredCaps.get().getValue()).contains("PUBLISH_UNPUBLISH_VOLUME");
    }
    Optional<Set<String>> remembered = rememberedCapabilities(pluginId);
    if (remembered.isPresent()) {
      return remembered.get().contains("PUBLISH_UNPUBLISH_VOLUME");
    }
    String prefix = keys.pluginEntriesPrefix(dev.csisupervisor.registry.PluginType.CSI_CONTROLLER, pluginId);
    TxnResponse r = ops.txn(TxnRequest.newBuilder().addSuccess(rangePrefix(prefix, 0)).build());
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

  /** The intent, before ControllerPublishVolume: only while there is no attachment and the node claims the volume. */
  Optional<ClusterAttachment> intend(ClusterVolumes.Leadership l, ClusterAttachment attaching) {
    if (attaching.state() != ClusterAttachment.State.ATTACHING) {
      throw new IllegalArgumentException("an intent is ATTACHING, got " + attaching.state());
    }
    String key = key(attaching);
    return written(ops.txn(TxnRequest.newBuilder().addCompare(held(l)).addCompare(absent(key))
        .addCompare(some(keys.nodeClaimsPrefix(attaching.pluginId(), attaching.volumeId(), attaching.nodeId())))
        .addSuccess(put(key, VolumeCodec.encode(attaching), 0)).build()), attaching);
  }

  /** {@code to} over {@code from}, if {@code from} is as read (its revision). */
  Optional<ClusterAttachment> update(ClusterVolumes.Leadership l, ClusterAttachment from, ClusterAttachment to) {
    String key = key(from);
    return written(ops.txn(TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, from.revision()))
        .addSuccess(put(key, VolumeCodec.encode(to), 0)).build()), to);
  }

  /** DETACHING, only if {@code a} is as read and the node has no claim of the volume left. */
  Optional<ClusterAttachment> markDetaching(ClusterVolumes.Leadership l, ClusterAttachment a) {
    ClusterAttachment detaching = a.next(ClusterAttachment.State.DETACHING, a.publishContext(), "", nodeId,
        clock.instant(), Optional.empty());
    String key = key(a);
    return written(ops.txn(TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, a.revision()))
        .addCompare(none(keys.nodeClaimsPrefix(a.pluginId(), a.volumeId(), a.nodeId())))
        .addSuccess(put(key, VolumeCodec.encode(detaching), 0)).build()), detaching);
  }

  /** Deletes the attachment after its ControllerUnpublishVolume succeeded, if it is as read. */
  boolean delete(ClusterVolumes.Leadership l, ClusterAttachment a) {
    String key = key(a);
    return ops.txn(TxnRequest.newBuilder().addCompare(held(l)).addCompare(modIs(key, a.revision()))
        .addSuccess(EtcdOps.delete(key)).build()).getSucceeded();
  }

  /** While the node is lost (no node key, no clean-stop marker), or, {@code ordered}, gone with its order there. */
  private TxnRequest.Builder whileLost(ClusterVolumes.Leadership l, String node, boolean ordered) {
    return TxnRequest.newBuilder().addCompare(held(l)).addCompare(absent(keys.nodeKey(node)))
        .addCompare(ordered ? EtcdOps.present(keys.detachOrderKey(node)) : absent(keys.stoppedKey(node)));
  }

  /** The fence's first step: DETACHING, only while the node is lost and {@code a} is as read. */
  Optional<ClusterAttachment> beginFence(ClusterVolumes.Leadership l, ClusterAttachment a, boolean ordered) {
    ClusterAttachment detaching = a.next(ClusterAttachment.State.DETACHING, a.publishContext(),
        ordered ? "detaching node " + a.nodeId() + " as an operator ordered (it is gone)"
            : "fencing lost node " + a.nodeId(), nodeId, clock.instant(), Optional.empty());
    String key = key(a);
    return written(ops.txn(whileLost(l, a.nodeId(), ordered).addCompare(modIs(key, a.revision()))
        .addSuccess(put(key, VolumeCodec.encode(detaching), 0)).build()), detaching);
  }

  /**
   * The fence's last step, after its ControllerUnpublishVolume succeeded (or with no attachment at all): the lost
   * node's claims of the volume and the attachment deleted, in one transaction that also checks the node is still
   * lost, the attachment is as read ({@code a}, or absent), and no claim of the node was put after {@code revision}
   * (the snapshot that decided it).
   */
  boolean completeFence(ClusterVolumes.Leadership l, String pluginId, String volumeId, String node,
      Optional<ClusterAttachment> a, long revision, boolean ordered) {
    String key = keys.attachmentKey(pluginId, volumeId, node);
    String claims = keys.nodeClaimsPrefix(pluginId, volumeId, node);
    TxnResponse r = ops.txn(whileLost(l, node, ordered).addCompare(a.map(x -> modIs(key, x.revision())).orElse(absent(key)))
        .addCompare(unchangedSince(claims, revision))
        .addSuccess(EtcdOps.delete(key)).addSuccess(deletePrefix(claims)).build());
    if (r.getSucceeded()) {
      log.warn("FENCED: node {} {}: its claims of {}/{} deleted ({})", node,
          ordered ? "gone, detach ordered by an operator" : "lost past detach_after", pluginId, volumeId,
          a.isPresent() ? "after its ControllerUnpublishVolume" : "it had no attachment");
    }
    return r.getSucceeded();
  }

  /** Remembers the controller capabilities of the plugin id (written only when they changed). */
  void rememberCapabilities(ClusterVolumes.Leadership l, Set<String> capabilities) {
    String key = keys.capabilitiesKey(l.pluginId());
    com.google.protobuf.ByteString value = VolumeCodec.encodeCapabilities(capabilities, nodeId, clock.instant());
    var now = ops.txn(TxnRequest.newBuilder().addSuccess(range(key)).build()).getResponses(0).getResponseRange();
    if (now.getKvsCount() > 0) {
      try {
        if (VolumeCodec.decodeCapabilities(now.getKvs(0).getValue()).equals(capabilities)) {
          return;
        }
      } catch (IllegalArgumentException e) {
        log.warn("cluster volumes: {} does not read ({}): written again", key, e.getMessage());
      }
    }
    ops.txn(TxnRequest.newBuilder().addCompare(held(l)).addSuccess(put(key, value, 0)).build());
  }

  /** The controller capabilities remembered for the plugin id, if any agent ever led it. */
  private Optional<Set<String>> rememberedCapabilities(String pluginId) {
    String key = keys.capabilitiesKey(pluginId);
    var r = ops.txn(TxnRequest.newBuilder().addSuccess(range(key)).build()).getResponses(0).getResponseRange();
    return r.getKvsCount() == 0 ? Optional.empty()
        : Optional.of(VolumeCodec.decodeCapabilities(r.getKvs(0).getValue()));
  }

  /** This node's clean stop with its mounts kept: it is not lost, and never fenced, until it starts again. */
  void markStopped() {
    ops.txn(TxnRequest.newBuilder().addSuccess(put(keys.stoppedKey(nodeId),
        VolumeCodec.encodeController(nodeId, clock.instant()), 0)).build());
    log.info("cluster volumes: node {} marked stopped cleanly (its mounts are kept; it is not a lost node)", nodeId);
  }

  /**
   * This node runs again: its clean-stop marker goes, once its node key is back (so it is never lost in between); and
   * an operator's detach order left from when it was gone (a {@code --wait} that timed out) goes too, so that it does
   * not fence the node at once the next time it is lost. Read-only transactions when there is nothing to do.
   */
  void clearStopped() {
    String stopped = keys.stoppedKey(nodeId);
    String order = keys.detachOrderKey(nodeId);
    TxnResponse read = ops.txn(TxnRequest.newBuilder().addSuccess(EtcdOps.range(stopped))
        .addSuccess(EtcdOps.range(order)).build());
    for (int i = 0; i < 2; i++) {
      String key = i == 0 ? stopped : order;
      if (read.getResponses(i).getResponseRange().getKvsCount() > 0 && ops.txn(TxnRequest.newBuilder()
          .addCompare(EtcdOps.present(key)).addCompare(EtcdOps.present(keys.nodeKey(nodeId)))
          .addSuccess(EtcdOps.delete(key)).build()).getSucceeded()) {
        log.info("cluster volumes: node {} runs again: {} removed", nodeId, i == 0 ? "its clean-stop marker"
            : "an operator's detach order left from when it was gone");
      }
    }
  }
}
