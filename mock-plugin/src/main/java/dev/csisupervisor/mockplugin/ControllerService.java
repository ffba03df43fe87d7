package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.ControllerGetVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerGetVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerModifyVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeResponse;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeResponse;
import dev.csisupervisor.csi.v1.CreateSnapshotRequest;
import dev.csisupervisor.csi.v1.CreateSnapshotResponse;
import dev.csisupervisor.csi.v1.CreateVolumeRequest;
import dev.csisupervisor.csi.v1.CreateVolumeResponse;
import dev.csisupervisor.csi.v1.DeleteSnapshotRequest;
import dev.csisupervisor.csi.v1.DeleteSnapshotResponse;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeResponse;
import dev.csisupervisor.csi.v1.GetCapacityRequest;
import dev.csisupervisor.csi.v1.GetCapacityResponse;
import dev.csisupervisor.csi.v1.GetSnapshotRequest;
import dev.csisupervisor.csi.v1.GetSnapshotResponse;
import dev.csisupervisor.csi.v1.ListSnapshotsRequest;
import dev.csisupervisor.csi.v1.ListSnapshotsResponse;
import dev.csisupervisor.csi.v1.ListVolumesRequest;
import dev.csisupervisor.csi.v1.ListVolumesResponse;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.grpc.stub.StreamObserver;

/**
 * The CSI Controller service over the {@link InMemoryDriver}: every Controller RPC of CSI
 * v1.12.0. Which ones a client may call is what {@code ControllerGetCapabilities} advertises (the
 * script's capabilities); the others still answer correctly if called.
 */
final class ControllerService extends ControllerGrpc.ControllerImplBase {

  private final Script script;
  private final Responder responder;
  private final InMemoryDriver driver;

  ControllerService(Script script, Responder responder, InMemoryDriver driver) {
    this.script = script;
    this.responder = responder;
    this.driver = driver;
  }

  @Override
  public void controllerGetCapabilities(
      ControllerGetCapabilitiesRequest request, StreamObserver<ControllerGetCapabilitiesResponse> observer) {
    responder.reply(observer, ControllerGetCapabilitiesResponse.newBuilder()
        .addAllCapabilities(script.controllerCapabilities())
        .build());
  }

  @Override
  public void createVolume(CreateVolumeRequest request, StreamObserver<CreateVolumeResponse> observer) {
    responder.answer(observer, () -> driver.createVolume(request));
  }

  @Override
  public void deleteVolume(DeleteVolumeRequest request, StreamObserver<DeleteVolumeResponse> observer) {
    responder.answer(observer, () -> driver.deleteVolume(request));
  }

  @Override
  public void controllerPublishVolume(
      ControllerPublishVolumeRequest request, StreamObserver<ControllerPublishVolumeResponse> observer) {
    responder.answer(observer, () -> driver.controllerPublish(request));
  }

  @Override
  public void controllerUnpublishVolume(
      ControllerUnpublishVolumeRequest request, StreamObserver<ControllerUnpublishVolumeResponse> observer) {
    responder.answer(observer, () -> driver.controllerUnpublish(request));
  }

  @Override
  public void validateVolumeCapabilities(
      ValidateVolumeCapabilitiesRequest request, StreamObserver<ValidateVolumeCapabilitiesResponse> observer) {
    responder.answer(observer, () -> driver.validate(request));
  }

  @Override
  public void listVolumes(ListVolumesRequest request, StreamObserver<ListVolumesResponse> observer) {
    responder.answer(observer, () -> driver.listVolumes(request));
  }

  @Override
  public void getCapacity(GetCapacityRequest request, StreamObserver<GetCapacityResponse> observer) {
    responder.answer(observer, () -> driver.getCapacity(request));
  }

  @Override
  public void createSnapshot(CreateSnapshotRequest request, StreamObserver<CreateSnapshotResponse> observer) {
    responder.answer(observer, () -> driver.createSnapshot(request));
  }

  @Override
  public void deleteSnapshot(DeleteSnapshotRequest request, StreamObserver<DeleteSnapshotResponse> observer) {
    responder.answer(observer, () -> driver.deleteSnapshot(request));
  }

  @Override
  public void listSnapshots(ListSnapshotsRequest request, StreamObserver<ListSnapshotsResponse> observer) {
    responder.answer(observer, () -> driver.listSnapshots(request));
  }

  @Override
  public void getSnapshot(GetSnapshotRequest request, StreamObserver<GetSnapshotResponse> observer) {
    responder.answer(observer, () -> driver.getSnapshot(request));
  }

  @Override
  public void controllerExpandVolume(
      ControllerExpandVolumeRequest request, StreamObserver<ControllerExpandVolumeResponse> observer) {
    responder.answer(observer, () -> driver.controllerExpand(request));
  }

  @Override
  public void controllerGetVolume(
      ControllerGetVolumeRequest request, StreamObserver<ControllerGetVolumeResponse> observer) {
    responder.answer(observer, () -> driver.controllerGetVolume(request));
  }

  @Override
  public void controllerModifyVolume(
      ControllerModifyVolumeRequest request, StreamObserver<ControllerModifyVolumeResponse> observer) {
    responder.answer(observer, () -> driver.controllerModify(request));
  }
}
