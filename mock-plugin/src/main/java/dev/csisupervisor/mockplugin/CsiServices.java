package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.GetPluginCapabilitiesResponse;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.NodeGrpc;

/**
 * Every CSI RPC the mock plugin serves and what answers it, in one table.
 *
 * <ul>
 *   <li>Identity answers from the {@link Script}; Probe is {@link IdentityService}'s.
 *   <li>Controller: every Controller RPC of CSI v1.12.0, over the {@link InMemoryDriver}. Which ones
 *       a client may call is what {@code ControllerGetCapabilities} advertises (the script's
 *       capabilities); the others still answer correctly if called.
 *   <li>Node: every Node RPC of CSI v1.12.0, over the {@link InMemoryDriver}. Publishing creates the
 *       target path (and unpublishing removes it), as the spec asks of a plugin; nothing is mounted.
 * </ul>
 *
 * <p>Which services are bound on the socket is the plugin's {@link MockMode}.
 */
final class CsiServices {

  private final Script script;
  private final InMemoryDriver driver;
  private final IdentityService identity;

  CsiServices(Script script, InMemoryDriver driver, IdentityService identity) {
    this.script = script;
    this.driver = driver;
    this.identity = identity;
  }

  /** The table, answering through {@code responder} once a call is past {@code faults}. */
  ServiceTable table(Responder responder, CallFaults faults) {
    return new ServiceTable(responder, faults)
        .reply(IdentityGrpc.getGetPluginInfoMethod(), script::pluginInfo)
        .reply(IdentityGrpc.getGetPluginCapabilitiesMethod(), this::pluginCapabilities)
        .bind(IdentityGrpc.getProbeMethod(), identity::probe)

        .reply(ControllerGrpc.getControllerGetCapabilitiesMethod(), this::controllerCapabilities)
        .answer(ControllerGrpc.getCreateVolumeMethod(), driver::createVolume)
        .answer(ControllerGrpc.getDeleteVolumeMethod(), driver::deleteVolume)
        .answer(ControllerGrpc.getControllerPublishVolumeMethod(), driver::controllerPublish)
        .answer(ControllerGrpc.getControllerUnpublishVolumeMethod(), driver::controllerUnpublish)
        .answer(ControllerGrpc.getValidateVolumeCapabilitiesMethod(), driver::validate)
        .answer(ControllerGrpc.getListVolumesMethod(), driver::listVolumes)
        .answer(ControllerGrpc.getGetCapacityMethod(), driver::getCapacity)
        .answer(ControllerGrpc.getCreateSnapshotMethod(), driver::createSnapshot)
        .answer(ControllerGrpc.getDeleteSnapshotMethod(), driver::deleteSnapshot)
        .answer(ControllerGrpc.getListSnapshotsMethod(), driver::listSnapshots)
        .answer(ControllerGrpc.getGetSnapshotMethod(), driver::getSnapshot)
        .answer(ControllerGrpc.getControllerExpandVolumeMethod(), driver::controllerExpand)
        .answer(ControllerGrpc.getControllerGetVolumeMethod(), driver::controllerGetVolume)
        .answer(ControllerGrpc.getControllerModifyVolumeMethod(), driver::controllerModify)

        .reply(NodeGrpc.getNodeGetCapabilitiesMethod(), this::nodeCapabilities)
        .reply(NodeGrpc.getNodeGetInfoMethod(), script::nodeInfo)
        .answer(NodeGrpc.getNodeStageVolumeMethod(), driver::nodeStage)
        .answer(NodeGrpc.getNodeUnstageVolumeMethod(), driver::nodeUnstage)
        .answer(NodeGrpc.getNodePublishVolumeMethod(), driver::nodePublish)
        .answer(NodeGrpc.getNodeUnpublishVolumeMethod(), driver::nodeUnpublish)
        .answer(NodeGrpc.getNodeGetVolumeStatsMethod(), driver::nodeGetVolumeStats)
        .answer(NodeGrpc.getNodeExpandVolumeMethod(), driver::nodeExpand);
  }

  private GetPluginCapabilitiesResponse pluginCapabilities() {
    return GetPluginCapabilitiesResponse.newBuilder().addAllCapabilities(script.pluginCapabilities()).build();
  }

  private ControllerGetCapabilitiesResponse controllerCapabilities() {
    return ControllerGetCapabilitiesResponse.newBuilder().addAllCapabilities(script.controllerCapabilities()).build();
  }

  private NodeGetCapabilitiesResponse nodeCapabilities() {
    return NodeGetCapabilitiesResponse.newBuilder().addAllCapabilities(script.nodeCapabilities()).build();
  }
}
