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
 *   <li>Controller: every Controller RPC of CSI v1.12.0, by the {@link InMemoryDriver}'s
 *       {@link DriverController}, {@link DriverInventory} and {@link DriverSnapshots}; CreateVolume and
 *       CreateSnapshot answer after their scripted create and cut times. Which ones a client may call is what
 *       {@code ControllerGetCapabilities} advertises (the script's capabilities); the others still
 *       answer correctly if called.
 *   <li>Node: every Node RPC of CSI v1.12.0, by the {@link InMemoryDriver}'s {@link DriverNode}.
 *       Publishing creates the target path (and unpublishing removes it), as the spec asks of a
 *       plugin; nothing is mounted unless the plugin has {@link RealMounts}.
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
    DriverController controller = driver.controller();
    DriverInventory inventory = driver.inventory();
    DriverSnapshots snapshots = driver.snapshotCalls();
    DriverNode node = driver.node();
    return new ServiceTable(responder, faults)
        .reply(IdentityGrpc.getGetPluginInfoMethod(), script::pluginInfo)
        .reply(IdentityGrpc.getGetPluginCapabilitiesMethod(), this::pluginCapabilities)
        .bind(IdentityGrpc.getProbeMethod(), identity::probe)

        .reply(ControllerGrpc.getControllerGetCapabilitiesMethod(), this::controllerCapabilities)
        .bind(ControllerGrpc.getCreateVolumeMethod(), (request, observer) ->
            createVolume(responder, controller, request, observer))
        .answer(ControllerGrpc.getDeleteVolumeMethod(), controller::deleteVolume)
        .answer(ControllerGrpc.getControllerPublishVolumeMethod(), controller::controllerPublish)
        .answer(ControllerGrpc.getControllerUnpublishVolumeMethod(), controller::controllerUnpublish)
        .answer(ControllerGrpc.getValidateVolumeCapabilitiesMethod(), inventory::validate)
        .answer(ControllerGrpc.getListVolumesMethod(), inventory::listVolumes)
        .answer(ControllerGrpc.getGetCapacityMethod(), controller::getCapacity)
        .bind(ControllerGrpc.getCreateSnapshotMethod(), (request, observer) ->
            createSnapshot(responder, snapshots, request, observer))
        .answer(ControllerGrpc.getDeleteSnapshotMethod(), snapshots::deleteSnapshot)
        .answer(ControllerGrpc.getListSnapshotsMethod(), snapshots::listSnapshots)
        .answer(ControllerGrpc.getGetSnapshotMethod(), snapshots::getSnapshot)
        .answer(ControllerGrpc.getControllerExpandVolumeMethod(), controller::controllerExpand)
        .answer(ControllerGrpc.getControllerGetVolumeMethod(), inventory::controllerGetVolume)
        .answer(ControllerGrpc.getControllerModifyVolumeMethod(), controller::controllerModify)

        .reply(NodeGrpc.getNodeGetCapabilitiesMethod(), this::nodeCapabilities)
        .reply(NodeGrpc.getNodeGetInfoMethod(), script::nodeInfo)
        .answer(NodeGrpc.getNodeStageVolumeMethod(), node::nodeStage)
        .answer(NodeGrpc.getNodeUnstageVolumeMethod(), node::nodeUnstage)
        .answer(NodeGrpc.getNodePublishVolumeMethod(), node::nodePublish)
        .answer(NodeGrpc.getNodeUnpublishVolumeMethod(), node::nodeUnpublish)
        .answer(NodeGrpc.getNodeGetVolumeStatsMethod(), node::nodeGetVolumeStats)
        .answer(NodeGrpc.getNodeExpandVolumeMethod(), node::nodeExpand);
  }

  /**
   * CreateVolume, with the driver's scripted create time: the volume is made at once and the answer sent after that
   * time, from a task on the event loop (never a sleeping thread); the same name asked meanwhile is ABORTED.
   */
  private void createVolume(Responder responder, DriverController controller,
      dev.csisupervisor.csi.v1.CreateVolumeRequest request,
      io.grpc.stub.StreamObserver<dev.csisupervisor.csi.v1.CreateVolumeResponse> observer) {
    long takes = driver.createTime().toNanos();
    if (takes == 0) {
      responder.answer(observer, () -> controller.createVolume(request));
      return;
    }
    java.util.Optional<dev.csisupervisor.csi.v1.CreateVolumeResponse> answer =
        responder.attempt(observer, () -> controller.createVolume(request));
    if (answer.isEmpty()) {
      return;
    }
    dev.csisupervisor.csi.v1.CreateVolumeResponse made = answer.get();
    if (!controller.createPending(request.getName())) {
      responder.reply(observer, made); // made before: answered at once
      return;
    }
    responder.after(takes, () -> {
      controller.createAnswered(request.getName());
      responder.reply(observer, made);
    });
  }

  /**
   * CreateSnapshot, with the driver's snapshot time: the snapshot exists from the call's start and the answer (its
   * readiness then) is sent when the cut is done, from a task on the event loop; the same name asked meanwhile is
   * ABORTED.
   */
  private static void createSnapshot(Responder responder, DriverSnapshots snapshots,
      dev.csisupervisor.csi.v1.CreateSnapshotRequest request,
      io.grpc.stub.StreamObserver<dev.csisupervisor.csi.v1.CreateSnapshotResponse> observer) {
    java.util.Optional<DriverSnapshots.Cut> started = responder.attempt(observer,
        () -> snapshots.createSnapshot(request));
    if (started.isEmpty()) {
      return;
    }
    DriverSnapshots.Cut cut = started.get();
    if (cut.remainingMs() == 0) {
      responder.answer(observer, () -> snapshots.describe(cut.id()));
      return;
    }
    responder.after(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(cut.remainingMs()),
        () -> responder.answer(observer, () -> snapshots.describe(cut.id())));
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
