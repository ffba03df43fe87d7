package dev.csisupervisor.volumes;

import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.ControllerExpandResult;
import dev.csisupervisor.client.CreateVolumeRequest;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.NodeExpandRequest;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.volumes.Plugins.ControllerPlugin;
import dev.csisupervisor.volumes.Plugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A volume's life outside its mounts: {@code CreateVolume} and {@code DeleteVolume} through the plugin's
 * controller, and expansion ({@code ControllerExpandVolume}, then {@code NodeExpandVolume} where the volume is
 * published here and the controller says the node must grow it too). Each runs on the volume's lane (a create
 * on its name's); a volume in use here is not deleted.
 */
final class ProvisioningOperations {
  private final VolumeContext ctx;

  ProvisioningOperations(VolumeContext ctx) {
    this.ctx = ctx;
  }

  CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets) {
    VolumeIds.checkPlugin(pluginId);
    CreateVolumeRequest request = new CreateVolumeRequest(VolumeIds.checkVolume("name", name), capacity, capabilities,
        parameters, secrets);
    ControllerPlugin controller;
    try {
      controller = controllerFor(pluginId, CsiCapabilities.CREATE_DELETE_VOLUME);
    } catch (VolumeException e) {
      return CompletableFuture.failedFuture(e);
    }
    // Serialized by name: the volume id is not known before the answer.
    return ctx.lanes().submit(new VolumeKey(pluginId, "\0create/" + name), () -> ctx.calls().call("CreateVolume",
        "creation of " + name, false, () -> controller.client().createVolumeAsync(request)));
  }

  CompletableFuture<Void> delete(VolumeKey key, Secrets secrets) {
    java.util.Objects.requireNonNull(secrets, "secrets");
    return ctx.lanes().submit(key, () -> {
      VolumeRecord r = ctx.records().get(key);
      if (r != null) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.IN_USE, "volume " + key
            + " is in use on this node (allocs " + r.allocs() + "); unmount it first (csi-agent volume unmount,"
            + " with --force if its node plugin is gone for good)"));
      }
      ControllerPlugin controller;
      try {
        controller = controllerFor(key.pluginId(), CsiCapabilities.CREATE_DELETE_VOLUME);
      } catch (VolumeException e) {
        return CompletableFuture.failedFuture(e);
      }
      return ctx.calls().call("DeleteVolume", "deletion of " + key, false,
          () -> controller.client().deleteVolumeAsync(key.volumeId(), secrets));
    });
  }

  CompletableFuture<Long> expand(VolumeKey key, CapacityRange range, Secrets secrets) {
    java.util.Objects.requireNonNull(range, "range");
    java.util.Objects.requireNonNull(secrets, "secrets");
    String pluginId = key.pluginId();
    String volumeId = key.volumeId();
    return ctx.lanes().submit(key, () -> {
      String what = "expansion of " + key;
      Optional<ControllerPlugin> controller = ctx.plugins().readyController(pluginId)
          .filter(p -> p.has(CsiCapabilities.EXPAND_VOLUME));
      Optional<NodePlugin> node = ctx.plugins().readyNode(pluginId).filter(n -> n.has(CsiCapabilities.EXPAND_VOLUME));
      if (controller.isEmpty() && node.isEmpty()) {
        return CompletableFuture.failedFuture(new VolumeException(Reason.UNSUPPORTED,
            "plugin " + pluginId + " has no ready controller or node service offering EXPAND_VOLUME"));
      }
      VolumeRecord r = ctx.records().get(key);
      Optional<UsageRecord> usage = r == null ? Optional.empty()
          : r.usages().values().stream().filter(UsageRecord::hasPublished).findFirst();
      Optional<VolumeCapability> capability = usage.map(UsageRecord::capability);
      CompletableFuture<ControllerExpandResult> first = controller.isPresent()
          ? ctx.calls().call("ControllerExpandVolume", what, false,
              () -> controller.get().client().controllerExpandVolumeAsync(volumeId, range, capability, secrets))
          : CompletableFuture.completedFuture(new ControllerExpandResult(0, true));
      return first.thenCompose(result -> {
        if (!result.nodeExpansionRequired() || node.isEmpty() || usage.isEmpty()) {
          if (controller.isEmpty() && usage.isEmpty()) {
            return CompletableFuture.failedFuture(new VolumeException(Reason.NOT_MOUNTED, "volume " + key
                + " is not mounted on this node, and the plugin has no controller to expand it offline"));
          }
          return CompletableFuture.completedFuture(result.capacityBytes());
        }
        UsageRecord u = usage.get();
        String alloc = u.allocs().entrySet().stream().filter(a -> a.getValue() == AllocPhase.PUBLISHED)
            .findFirst().orElseThrow().getKey();
        Optional<Path> staging = r.stagingPathOf(u);
        return ctx.calls().call("NodeExpandVolume", what, false, () -> node.get().client().nodeExpandVolumeAsync(
            new NodeExpandRequest(volumeId, r.targetPath(alloc, u.usage()), range, staging, capability, secrets)))
            .thenApply(bytes -> bytes != 0 ? bytes : result.capacityBytes());
      });
    });
  }

  private ControllerPlugin controllerFor(String pluginId, String capability) throws VolumeException {
    Optional<ControllerPlugin> c = ctx.plugins().readyController(pluginId);
    if (c.isEmpty()) {
      throw new VolumeException(Reason.PLUGIN_UNAVAILABLE, "controller plugin " + pluginId
          + (ctx.plugins().registeredController(pluginId).isPresent() ? " is not ready" : " is not registered"));
    }
    if (!c.get().has(capability)) {
      throw new VolumeException(Reason.UNSUPPORTED, "controller plugin " + pluginId + " does not offer " + capability);
    }
    return c.get();
  }
}
