package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerExpandResult;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.volumes.ReadyPlugins.ControllerPlugin;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A volume's life outside its mounts: {@code CreateVolume} and {@code DeleteVolume} through the plugin's
 * controller, and expansion ({@code ControllerExpandVolume}, then {@code NodeExpandVolume} where the volume is
 * published here and the controller says the node must grow it too). Each runs on the volume's lane (a create
 * on its name's); a volume in use here is not deleted.
 *
 * <p><b>Expansion, as CSI has it.</b> A plugin whose {@code VolumeExpansion} is {@code OFFLINE} alone does not
 * expand a volume published or staged here: refused ({@code IN_USE}) before any call. A
 * {@code node_expansion_required} that cannot be answered now (the volume is not published here, or its node
 * plugin is not ready) is recorded in the volume's record ({@link VolumeRecord#nodeExpansion()}; a record of its
 * own if the volume is not on this node) and sent after the volume's next NodePublishVolume here.
 *
 * <p><b>Topology.</b> A create for a controller with {@code VOLUME_ACCESSIBILITY_CONSTRAINTS} asks for this node's
 * topology (its node plugin's NodeGetInfo {@code accessible_topology}), required and preferred, unless the caller
 * gives its own.
 */
final class ProvisioningOperations {
  private static final Logger log = LoggerFactory.getLogger(ProvisioningOperations.class);

  private final VolumeContext ctx;
  private final RecordCommit commit;
  private final Duration pluginWait;

  /**
   * @param pluginWait how long a create, delete or expansion waits for the plugin's controller (or node) to be ready
   */
  ProvisioningOperations(VolumeContext ctx, RecordCommit commit, Duration pluginWait) {
    this.ctx = ctx;
    this.commit = commit;
    this.pluginWait = pluginWait;
  }

  CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets,
      Optional<TopologyRequirement> topology) {
    VolumeIds.checkPlugin(pluginId);
    Objects.requireNonNull(topology, "topology");
    // Bad arguments throw before anything is asked of the plugin.
    CreateVolumeRequest asked = new CreateVolumeRequest(VolumeIds.checkVolume("name", name), capacity, capabilities,
        parameters, secrets);
    return controllerFor(pluginId, CsiCapabilities.CREATE_DELETE_VOLUME).thenCompose(controller -> {
      CreateVolumeRequest request;
      try {
        request = new CreateVolumeRequest(asked.name(), asked.capacityRange(), asked.capabilities(),
            asked.parameters(), asked.secrets(), accessibilityRequirements(controller, topology));
      } catch (VolumeException e) {
        return CompletableFuture.failedFuture(e);
      }
      // Serialized by name: the volume id is not known before the answer.
      return ctx.lanes().submit(new VolumeKey(pluginId, "\0create/" + name), () -> ctx.calls().call("CreateVolume",
          "creation of " + name, false, () -> controller.client().createVolumeAsync(request)));
    });
  }

  /**
   * What a create asks of the volume's topology (CSI: only of a plugin with
   * {@code VOLUME_ACCESSIBILITY_CONSTRAINTS}): the caller's, else this node's, required and preferred.
   */
  private Optional<TopologyRequirement> accessibilityRequirements(ControllerPlugin controller,
      Optional<TopologyRequirement> given) throws VolumeException {
    String pluginId = controller.info().name();
    boolean constrained = controller.info().fingerprint().pluginCapabilities()
        .contains(CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS);
    if (given.isPresent()) {
      if (!constrained) {
        throw new VolumeException(Reason.UNSUPPORTED, "controller plugin " + pluginId + " does not offer "
            + CsiCapabilities.VOLUME_ACCESSIBILITY_CONSTRAINTS + ", so a topology cannot be asked of it (CSI)");
      }
      return given;
    }
    if (!constrained) {
      return Optional.empty();
    }
    Map<String, String> here = ctx.plugins().registeredNode(pluginId)
        .map(i -> i.fingerprint().accessibleTopology()).orElse(Map.of());
    if (here.isEmpty()) {
      log.info("create on plugin {}: no topology of this node is known (no node plugin of it reported one); the "
          + "plugin chooses where the volume is", pluginId);
      return Optional.empty();
    }
    return Optional.of(TopologyRequirement.of(here));
  }

  CompletableFuture<Void> delete(VolumeKey key, Secrets secrets) {
    Objects.requireNonNull(secrets, "secrets");
    return controllerFor(key.pluginId(), CsiCapabilities.CREATE_DELETE_VOLUME)
        .thenCompose(controller -> ctx.lanes().submit(key, () -> {
          VolumeRecord r = ctx.records().get(key);
          if (r != null && r.onNode()) {
            return CompletableFuture.failedFuture(new VolumeException(Reason.IN_USE, "volume " + key
                + " is in use on this node (allocs " + r.allocs() + "); unmount it first (csi-agent volume unmount,"
                + " with --force if its node plugin is gone for good)"));
          }
          CompletableFuture<Void> deleted = ctx.calls().call("DeleteVolume", "deletion of " + key, false,
              () -> controller.client().deleteVolumeAsync(key.volumeId(), secrets));
          // A record that only owed a node expansion goes with the volume.
          return r == null ? deleted : deleted.thenCompose(x -> commit.commit(key, r,
              r.withNodeExpansion(Optional.empty()))).thenApply(x -> null);
        }));
  }

  CompletableFuture<Long> expand(VolumeKey key, CapacityRange range, Secrets secrets) {
    Objects.requireNonNull(range, "range");
    Objects.requireNonNull(secrets, "secrets");
    String pluginId = key.pluginId();
    String volumeId = key.volumeId();
    return expanderReady(pluginId).thenCompose(ready -> ctx.lanes().submit(key, () -> {
      String what = "expansion of " + key;
      Optional<ControllerPlugin> controller = ctx.plugins().readyController(pluginId)
          .filter(p -> p.has(CsiCapabilities.EXPAND_VOLUME));
      Optional<NodePlugin> node = ctx.plugins().readyNode(pluginId).filter(n -> n.has(CsiCapabilities.EXPAND_VOLUME));
      if (controller.isEmpty() && node.isEmpty()) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.UNSUPPORTED,
            "plugin " + pluginId + " has no ready controller or node service offering EXPAND_VOLUME"));
      }
      VolumeRecord r = ctx.records().get(key);
      boolean here = r != null && r.onNode();
      // Step 1: the plugin's expansion mode. OFFLINE alone: never while published or staged (CSI).
      if (here && offlineOnly(pluginId)) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.IN_USE, "plugin " + pluginId
            + " expands volumes offline only (" + CsiCapabilities.VOLUME_EXPANSION_OFFLINE + ", not ONLINE) and "
            + "volume " + key + " is published or staged on this node (allocs " + r.allocs() + "); unmount it, "
            + "expand it, and it is grown on the node at its next mount"));
      }
      Optional<UsageRecord> usage = here
          ? r.usages().values().stream().filter(UsageRecord::hasPublished).findFirst() : Optional.empty();
      Optional<VolumeCapability> capability = usage.map(UsageRecord::capability);
      if (controller.isEmpty() && usage.isEmpty()) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.NOT_MOUNTED, "volume " + key
            + " is not mounted on this node, and the plugin has no controller to expand it offline"));
      }
      // Step 2: the controller, if there is one (without: the node alone grows it).
      CompletableFuture<ControllerExpandResult> first = controller.isPresent()
          ? ctx.calls().call("ControllerExpandVolume", what, false,
              () -> controller.get().client().controllerExpandVolumeAsync(volumeId, range, capability, secrets))
          : CompletableFuture.completedFuture(new ControllerExpandResult(0, true));
      return first.thenCompose(result -> {
        if (!result.nodeExpansionRequired()) {
          return CompletableFuture.completedFuture(result.capacityBytes());
        }
        // Step 3: the node, now where it is published, else at its next mount here.
        if (node.isPresent() && usage.isPresent()) {
          UsageRecord u = usage.get();
          String alloc = u.allocs().entrySet().stream().filter(a -> a.getValue() == AllocPhase.PUBLISHED)
              .findFirst().orElseThrow().getKey();
          NodePlugin n = node.get();
          Path target = n.pluginPath(r.targetPath(alloc, u.usage()));
          Optional<Path> staging = r.stagingPathOf(u).map(n::pluginPath);
          return ctx.calls().call("NodeExpandVolume", what, false, () -> n.client().nodeExpandVolumeAsync(
                  new NodeExpandRequest(volumeId, target, range, staging, capability, secrets)))
              .thenApply(bytes -> bytes != 0 ? bytes : result.capacityBytes());
        }
        return owe(key, range).thenApply(x -> result.capacityBytes());
      });
    }));
  }

  /**
   * Done once the plugin's expander is ready: its controller if one is registered offering {@code EXPAND_VOLUME},
   * else its node plugin if that one offers it (each waited for up to the plugin wait: a plugin just started or
   * restarted is not ready yet); at once if neither is registered offering it.
   */
  private CompletableFuture<?> expanderReady(String pluginId) {
    if (ctx.plugins().registeredController(pluginId)
        .filter(i -> i.fingerprint().controllerCapabilities().contains(CsiCapabilities.EXPAND_VOLUME)).isPresent()) {
      return ctx.plugins().awaitController(pluginId, pluginWait);
    }
    if (ctx.plugins().registeredNode(pluginId)
        .filter(i -> i.fingerprint().nodeCapabilities().contains(CsiCapabilities.EXPAND_VOLUME)).isPresent()) {
      return ctx.plugins().awaitNode(pluginId, pluginWait);
    }
    return CompletableFuture.completedFuture(null);
  }

  /** Whether the plugin's expansion mode is {@code OFFLINE} without {@code ONLINE} (neither: not a rule). */
  private boolean offlineOnly(String pluginId) {
    Set<String> caps = ctx.plugins().registeredController(pluginId)
        .or(() -> ctx.plugins().registeredNode(pluginId))
        .map(i -> i.fingerprint().pluginCapabilities()).orElse(Set.of());
    return caps.contains(CsiCapabilities.VOLUME_EXPANSION_OFFLINE)
        && !caps.contains(CsiCapabilities.VOLUME_EXPANSION_ONLINE);
  }

  /**
   * Records a NodeExpandVolume the controller asked for and that cannot be sent now: done after the volume's next
   * NodePublishVolume here. Nothing is owed on this node if no node plugin of the id here expands volumes.
   */
  private CompletableFuture<Void> owe(VolumeKey key, CapacityRange range) {
    Optional<PluginInfo> node = ctx.plugins().registeredNode(key.pluginId())
        .filter(i -> i.fingerprint().nodeCapabilities().contains(CsiCapabilities.EXPAND_VOLUME));
    if (node.isEmpty()) {
      log.info("expansion of {}: the controller asks for a node expansion, but no node plugin {} here offers "
          + "EXPAND_VOLUME; the node that mounts it grows it", key, key.pluginId());
      return CompletableFuture.completedFuture(null);
    }
    VolumeRecord r = ctx.records().get(key);
    VolumeRecord base = r != null ? r : VolumeRecord.empty(key, ctx.plugins().pluginDir(node.get()));
    return commit.commit(key, r, base.withNodeExpansion(Optional.of(range))).thenRun(() -> {
      String why = (r != null && r.onNode() ? "node plugin " + key.pluginId() + " is not ready"
          : "it is not published here") + "; NodeExpandVolume is sent after its next NodePublishVolume here";
      log.info("expansion of {}: node expansion owed: {}", key, why);
      ctx.events().emit(VolumeEvent.Kind.NODE_EXPANSION_OWED, key, "", why);
    });
  }

  /**
   * The plugin's controller once it is ready (waiting up to the plugin wait: a plugin just started or restarted is
   * not yet), failing {@code UNSUPPORTED} if it does not offer {@code capability}.
   */
  private CompletableFuture<ControllerPlugin> controllerFor(String pluginId, String capability) {
    return ctx.plugins().awaitController(pluginId, pluginWait).thenCompose(c -> c.has(capability)
        ? CompletableFuture.completedFuture(c)
        : CompletableFuture.failedFuture(new VolumeException(Reason.UNSUPPORTED,
            "controller plugin " + pluginId + " does not offer " + capability)));
  }
}
