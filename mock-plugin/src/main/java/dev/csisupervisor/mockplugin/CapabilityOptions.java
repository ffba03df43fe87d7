package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerServiceCapability;
import dev.csisupervisor.csi.v1.NodeServiceCapability;
import dev.csisupervisor.csi.v1.PluginCapability;
import java.util.Collection;
import java.util.List;

/**
 * The part of {@link MockCsiPlugin.Builder} that sets the capabilities the plugin advertises (plugin, Controller and
 * Node), as raw numbers (unknown ones go on the wire as they are), enum values or full messages. Read by
 * {@code ScriptedPlugin} when a plugin is built. Not thread-safe, as the builder.
 *
 * @param <B> the builder, returned by every setter
 */
abstract class CapabilityOptions<B extends CapabilityOptions<B>> extends DriverOptions<B> {
  List<PluginCapability> pluginCapabilities; // null: the mode's default
  List<ControllerServiceCapability> controllerCapabilities = Capabilities.CONTROLLER.of(
      ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
      ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME,
      ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
      ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS,
      ControllerServiceCapability.RPC.Type.CLONE_VOLUME);
  List<NodeServiceCapability> nodeCapabilities =
      Capabilities.NODE.of(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME);

  /**
   * Plugin capabilities of the {@code Service} kind as raw numbers; unknown numbers go on the
   * wire as they are. Default: {@code CONTROLLER_SERVICE} if the mode serves Controller, else none.
   */
  public B pluginCapabilities(int... serviceTypes) {
    this.pluginCapabilities = Capabilities.PLUGIN.of(serviceTypes);
    return self();
  }

  public B pluginCapabilities(PluginCapability.Service.Type... serviceTypes) {
    this.pluginCapabilities = Capabilities.PLUGIN.of(serviceTypes);
    return self();
  }

  /** Plugin capabilities as full messages, e.g. with {@code VolumeExpansion}; empty for none. */
  public B pluginCapabilities(Collection<PluginCapability> capabilities) {
    this.pluginCapabilities = Capabilities.PLUGIN.copy(capabilities);
    return self();
  }

  /** Default: CREATE_DELETE_VOLUME, PUBLISH_UNPUBLISH_VOLUME, CREATE_DELETE_SNAPSHOT, LIST_SNAPSHOTS, CLONE_VOLUME. */
  public B controllerCapabilities(int... rpcTypes) {
    this.controllerCapabilities = Capabilities.CONTROLLER.of(rpcTypes);
    return self();
  }

  public B controllerCapabilities(ControllerServiceCapability.RPC.Type... rpcTypes) {
    this.controllerCapabilities = Capabilities.CONTROLLER.of(rpcTypes);
    return self();
  }

  public B controllerCapabilities(Collection<ControllerServiceCapability> capabilities) {
    this.controllerCapabilities = Capabilities.CONTROLLER.copy(capabilities);
    return self();
  }

  /** Default: STAGE_UNSTAGE_VOLUME. */
  public B nodeCapabilities(int... rpcTypes) {
    this.nodeCapabilities = Capabilities.NODE.of(rpcTypes);
    return self();
  }

  public B nodeCapabilities(NodeServiceCapability.RPC.Type... rpcTypes) {
    this.nodeCapabilities = Capabilities.NODE.of(rpcTypes);
    return self();
  }

  public B nodeCapabilities(Collection<NodeServiceCapability> capabilities) {
    this.nodeCapabilities = Capabilities.NODE.copy(capabilities);
    return self();
  }
}
