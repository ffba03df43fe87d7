package dev.csisupervisor.agent.views;

import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterSnapshot;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumeSnapshot;
import dev.csisupervisor.catalog.PluginSummary;
import dev.csisupervisor.catalog.ViewFreshness;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.registry.PluginType;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * The cluster as operators read it: {@code csi-agent cluster plugins --json}, {@code cluster volume status --json}
 * and the operator page's {@code /api/v1/cluster/...} are these objects (maps and lists for a JSON writer), and the
 * words of a request's progress and of a STUCK line are written here once. Stateless.
 */
public final class ClusterViews {
  private ClusterViews() {}

  /** The kinds of STUCK item, as {@code csi_agent_cluster_volume_stuck{kind}} counts them. */
  public enum StuckKind {
    /** A request the plugin failed: asked again to retry, or cancelled. */
    REQUEST_FAILED,
    /** A request retried after an error. */
    REQUEST_RETRIED,
    /** A request (or a cancelled one to undo) of a plugin id that has no controller agent now. */
    NO_CONTROLLER,
    /** A claim held by a node whose lease expired. */
    LOST_NODE_CLAIM,
    /** An attachment the controller's ControllerPublishVolume failed. */
    ATTACHMENT_FAILED,
    /** A claim or attachment key whose value does not read: it holds its volume until an operator's force. */
    UNREADABLE_KEY;

    /** The label value: {@code request_failed}, ... */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * One STUCK item: its kind, the plugin id and volume it is about (the volume null where it is none yet: a create),
   * and the line that says what waits, why, and the way out.
   */
  public record Stuck(StuckKind kind, String pluginId, String volumeId, String line) {}

  /** The CSI call a request makes. */
  public static String call(ClusterVolumeRequest.Kind kind) {
    return switch (kind) {
      case CREATE -> "CreateVolume";
      case DELETE -> "DeleteVolume";
      case SNAPSHOT -> "CreateSnapshot";
      case SNAPSHOT_DELETE -> "DeleteSnapshot";
      case MODIFY -> "ControllerModifyVolume";
      case REGISTER -> "ValidateVolumeCapabilities";
    };
  }

  /** Where a request is, in words, for a wait that ran out and for status. */
  public static String progress(ClusterVolumeRequest r, VolumesSnapshot s) {
    String leader = s.controllers().get(r.pluginId());
    if (r.state() == ClusterVolumeRequest.State.FAILED) {
      return "failed: " + r.message();
    }
    if (r.state() == ClusterVolumeRequest.State.DONE) {
      return switch (r.kind()) {
        case SNAPSHOT, SNAPSHOT_DELETE -> "done: snapshot " + r.volumeId();
        case MODIFY -> "done: mutable parameters " + r.spec().mutableParameters() + " set";
        case REGISTER -> "done: volume " + r.volumeId() + " registered";
        default -> "done: volume " + r.volumeId();
      };
    }
    if (r.state() == ClusterVolumeRequest.State.CANCELLED) {
      return "cancelled after it was sent: " + (leader == null ? "no controller agent for plugin " + r.pluginId()
          + " now to delete what it made (the next one does)" : "controller agent " + leader + " deletes what it made"
          + (r.kind() == ClusterVolumeRequest.Kind.SNAPSHOT && !r.volumeId().isEmpty() ? " (snapshot "
              + r.volumeId() + ")" : ""));
    }
    String call = call(r.kind());
    if (r.attemptStarted().isPresent()) {
      String on = r.controllerNodeId();
      return call + " attempt " + r.attempts() + " in flight on " + on + " since " + r.attemptStarted().get()
          + (leader == null ? " (no controller agent elected now: the next one sends it again)"
              : leader.equals(on) ? "" : " (" + on + " is no longer the controller agent; " + leader
                  + " sends it again)");
    }
    if (r.kind() == ClusterVolumeRequest.Kind.SNAPSHOT && !r.volumeId().isEmpty()) {
      // Cut, not ready: CreateSnapshot is sent again until it is (CSI).
      return "snapshot " + r.volumeId() + ": " + r.message() + r.nextAttempt().map(t -> "; asked again at " + t)
          .orElse("");
    }
    if (r.nextAttempt().isPresent()) {
      return "retried at " + r.nextAttempt().get() + " after attempt " + r.attempts() + ": " + r.message();
    }
    return leader == null ? "waiting: no controller agent for plugin " + r.pluginId() + " (no agent runs a healthy "
        + "controller of it)" : r.message().isEmpty() ? "waiting for controller agent " + leader
        : "controller agent " + leader + ": " + r.message();
  }

  /**
   * The volume a request is about, as status selects it: a delete's, modify's or register's own; a snapshot's source;
   * a snapshot-delete's snapshot's source (if recorded); null for a create (shown unless a volume is given).
   */
  public static String volumeOf(ClusterVolumeRequest r, VolumesSnapshot s) {
    return switch (r.kind()) {
      case DELETE, MODIFY, REGISTER -> r.name();
      case SNAPSHOT -> r.spec().source().map(f -> f.id()).orElse(null);
      case SNAPSHOT_DELETE -> s.snapshot(r.pluginId(), r.name()).map(ClusterVolumeSnapshot::sourceVolumeId)
          .orElse(null);
      case CREATE -> null;
    };
  }

  /** A size for people: "1.0 GiB", or "unknown" for 0. */
  public static String size(long bytes) {
    return bytes == 0 ? "unknown" : dev.csisupervisor.common.ByteSizes.format(bytes);
  }

  /** A recorded snapshot ({@code cluster volume snapshot list --json}). */
  public static Map<String, Object> snapshot(ClusterVolumeSnapshot x) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("plugin", x.pluginId());
    m.put("snapshot", x.snapshotId());
    m.put("name", x.name());
    m.put("sourceVolume", x.sourceVolumeId());
    m.put("sizeBytes", x.sizeBytes());
    m.put("creationTime", x.creationTime().map(Object::toString).orElse(""));
    m.put("readyToUse", x.readyToUse());
    return m;
  }

  /**
   * What waits and why: claims of lost nodes, failed attachments, failed requests, requests retried after an error
   * and requests of a plugin with no controller agent; each with its kind.
   */
  public static List<Stuck> stuckItems(VolumesSnapshot s) {
    List<Stuck> out = new ArrayList<>();
    for (ClusterVolumeRequest r : s.requests()) {
      if (r.state() == ClusterVolumeRequest.State.FAILED) {
        out.add(new Stuck(StuckKind.REQUEST_FAILED, r.pluginId(), volumeOf(r, s), r.describe() + " failed: "
            + r.message() + " (ask again to retry, or csi-agent cluster volume cancel " + r.kind().segment() + " "
            + r.pluginId() + " " + r.name() + ")"));
      } else if ((r.state() == ClusterVolumeRequest.State.PENDING || r.state() == ClusterVolumeRequest.State.CANCELLED)
          && (isRetried(r) || !s.controllers().containsKey(r.pluginId()))) {
        out.add(new Stuck(s.controllers().containsKey(r.pluginId()) ? StuckKind.REQUEST_RETRIED
            : StuckKind.NO_CONTROLLER, r.pluginId(), volumeOf(r, s), r.describe() + ": " + progress(r, s)));
      }
    }
    for (ClusterClaim c : s.claims()) {
      if (s.lost(c.nodeId())) {
        out.add(new Stuck(StuckKind.LOST_NODE_CLAIM, c.pluginId(), c.volumeId(), "claim of " + c.pluginId() + "/"
            + c.volumeId() + " by " + c.holder() + ": the node is lost; it stays until the node is back, detach_after"
            + " fences it, or csi-agent cluster volume detach --node " + c.nodeId() + " --force"));
      }
    }
    for (VolumesSnapshot.DamagedKey d : s.damaged()) {
      out.add(new Stuck(StuckKind.UNREADABLE_KEY, d.pluginId(), d.volumeId(), "UNREADABLE: " + d.key() + ": "
          + d.why() + (d.nodeId().isEmpty() ? ""
              : " (taken to hold the volume; csi-agent cluster volume detach --node " + d.nodeId()
                  + " --force removes it)")));
    }
    for (ClusterAttachment a : s.attachments()) {
      if (a.state() == ClusterAttachment.State.FAILED) {
        out.add(new Stuck(StuckKind.ATTACHMENT_FAILED, a.pluginId(), a.volumeId(), "attachment of " + a.pluginId()
            + "/" + a.volumeId() + " to node " + a.nodeId() + ": " + a.message()));
      }
    }
    return out;
  }

  /** Retried after an error (a snapshot cut and not ready yet is sent again too, but is not stuck). */
  private static boolean isRetried(ClusterVolumeRequest r) {
    return r.state() == ClusterVolumeRequest.State.PENDING && r.nextAttempt().isPresent()
        && !(r.kind() == ClusterVolumeRequest.Kind.SNAPSHOT && !r.volumeId().isEmpty());
  }

  /**
   * The STUCK lines of the {@link #stuckItems} that {@code status [PLUGIN [VOLUME_ID]]} selects ({@link #selected};
   * nulls: all); an unreadable key whose plugin id cannot be told is shown always.
   */
  public static List<String> stuck(VolumesSnapshot s, String plugin, String volumeId) {
    return stuckItems(s).stream().filter(i -> (i.kind() == StuckKind.UNREADABLE_KEY && i.pluginId().isEmpty())
        || selected(plugin, volumeId, i.pluginId(), i.volumeId())).map(Stuck::line).toList();
  }

  /** The requests {@code selected}, each with its progress. */
  public static List<Object> requestsJson(VolumesSnapshot s, Predicate<ClusterVolumeRequest> selected) {
    List<Object> out = new ArrayList<>();
    for (ClusterVolumeRequest r : s.requests()) {
      if (!selected.test(r)) {
        continue;
      }
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("kind", r.kind().name());
      m.put("plugin", r.pluginId());
      m.put("name", r.name());
      m.put("state", r.state().name());
      m.put("volume", r.volumeId());
      m.put("attempts", r.attempts());
      m.put("controller", r.controllerNodeId());
      m.put("attemptStarted", r.attemptStarted().map(Object::toString).orElse(""));
      m.put("nextAttempt", r.nextAttempt().map(Object::toString).orElse(""));
      m.put("message", r.message());
      r.spec().source().ifPresent(f -> m.put("source", f.toString()));
      if (!r.spec().mutableParameters().isEmpty()) {
        m.put("mutableParameters", r.spec().mutableParameters());
      }
      m.put("requested", r.requested().toString());
      m.put("progress", progress(r, s));
      out.add(m);
    }
    return out;
  }

  /** A volume with its claims and attachments. */
  /** How a claim's node is, when it is not running: lost (its lease expired), or stopped cleanly with its mounts. */
  public static String nodeState(VolumesSnapshot s, String node) {
    if (s.liveNodes().contains(node)) {
      return "";
    }
    java.time.Instant stopped = s.stoppedNodes().get(node);
    return stopped != null ? " (NODE STOPPED since " + stopped + ", mounts kept; not lost)" : " (NODE LOST)";
  }

  public static Map<String, Object> volume(ClusterVolume vol, VolumesSnapshot s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("plugin", vol.pluginId());
    m.put("volume", vol.volumeId());
    m.put("capacityBytes", vol.capacityBytes());
    m.put("accessModes", vol.accessModes().stream().map(Enum::name).sorted().toList());
    m.put("accessibleTopology", vol.accessibleTopology());
    m.put("parameters", vol.parameters());
    m.put("context", vol.volumeContext());
    m.put("source", vol.source().map(Object::toString).orElse(""));
    m.put("mutableParameters", vol.mutableParameters());
    m.put("validated", vol.validated());
    List<Object> claims = new ArrayList<>();
    for (ClusterClaim c : s.claimsOf(vol.pluginId(), vol.volumeId())) {
      claims.add(Map.of("node", c.nodeId(), "alloc", c.allocId(), "mode", c.mode().name(), "readOnly", c.readOnly(),
          "since", c.since().toString(), "nodeLive", s.liveNodes().contains(c.nodeId()),
          "nodeStopped", s.stoppedNodes().containsKey(c.nodeId())));
    }
    m.put("claims", claims);
    List<Object> attachments = new ArrayList<>();
    for (ClusterAttachment a : s.attachmentsOf(vol.pluginId(), vol.volumeId())) {
      attachments.add(Map.of("node", a.nodeId(), "state", a.state().name(), "controller", a.controllerNodeId(),
          "since", a.since().toString(), "message", a.message()));
    }
    m.put("attachments", attachments);
    return m;
  }

  /**
   * {@code cluster volume status [PLUGIN [VOLUME_ID]] --json}: the controller agents, the volumes selected, the
   * requests not done and the STUCK lines.
   *
   * @param plugin only this plugin id's volumes and requests, or null for all
   * @param volumeId only this volume (with {@code plugin}), or null
   */
  public static Map<String, Object> volumeStatus(VolumesSnapshot s, String plugin, String volumeId) {
    List<Object> vols = new ArrayList<>();
    s.volumes().stream().filter(vol -> selected(plugin, volumeId, vol.pluginId(), vol.volumeId()))
        .forEach(vol -> vols.add(volume(vol, s)));
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("revision", s.revision());
    m.put("controllers", new TreeMap<>(s.controllers()));
    m.put("volumes", vols);
    m.put("requests", requestsJson(s, r -> r.state() != ClusterVolumeRequest.State.DONE
        && selected(plugin, volumeId, r.pluginId(), volumeOf(r, s))));
    m.put("stuck", stuck(s, plugin, volumeId));
    return m;
  }

  /** A volume id of null: a request of the plugin not about one volume (a create), shown unless a volume is given. */
  public static boolean selected(String plugin, String volumeId, String p, String v) {
    return (plugin == null || plugin.equals(p)) && (volumeId == null || volumeId.equals(v));
  }

  /** How current a catalog read is. */
  public static Map<String, Object> freshness(ViewFreshness f) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("revision", f.revision());
    m.put("endpoint", f.endpoint());
    m.put("stale", f.stale());
    m.put("confirmed_at", f.lastConfirmed() == null ? null : f.lastConfirmed().toString());
    m.put("age_seconds", f.lastConfirmed() == null ? null : f.age(Instant.now()).toMillis() / 1000.0);
    m.put("stale_since", f.staleSince() == null ? null : f.staleSince().toString());
    m.put("error", f.lastError());
    return m;
  }

  /** One node's instance of a plugin in the catalog. */
  public static Map<String, Object> entry(CatalogEntry e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("node", e.nodeId());
    m.put("type", e.type().id());
    m.put("name", e.name());
    m.put("alloc", e.allocId());
    m.put("version", e.version());
    m.put("healthy", e.healthy());
    m.put("message", e.healthMessage());
    m.put("since", e.healthSince().toString());
    m.put("vendor_name", e.vendorName());
    m.put("vendor_version", e.vendorVersion());
    m.put("csi_node_id", e.csiNodeId());
    m.put("max_volumes_per_node", e.maxVolumesPerNode());
    m.put("topology", e.accessibleTopology());
    m.put("plugin_capabilities", e.pluginCapabilities());
    m.put("controller_capabilities", e.controllerCapabilities());
    m.put("node_capabilities", e.nodeCapabilities());
    return m;
  }

  /** A plugin name across the cluster: controllers and nodes healthy of expected (and each instance). */
  public static Map<String, Object> summary(PluginSummary s, boolean withEntries) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("name", s.name());
    m.put("controllers_healthy", s.controllersHealthy());
    m.put("controllers_expected", s.controllersExpected());
    m.put("nodes_healthy", s.nodesHealthy());
    m.put("nodes_expected", s.nodesExpected());
    if (withEntries) {
      m.put("instances", s.entries().stream().map(ClusterViews::entry).toList());
    }
    return m;
  }

  /** {@code cluster plugins [--type T] --json}: every plugin name's counts (and each instance), and the freshness. */
  public static Map<String, Object> plugins(ClusterSnapshot s, ViewFreshness f, PluginType type, boolean withEntries) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("revision", s.revision());
    m.put("plugins", s.plugins(type).stream().map(p -> summary(p, withEntries)).toList());
    m.put("freshness", freshness(f));
    return m;
  }
}
