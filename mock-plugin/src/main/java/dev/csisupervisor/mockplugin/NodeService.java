package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.NodeExpandVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeResponse;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.NodeGetInfoRequest;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsResponse;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeResponse;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeResponse;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeResponse;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeResponse;
import io.grpc.stub.StreamObserver;

/**
 * The CSI Node service over the {@link InMemoryDriver}: every Node RPC of CSI v1.12.0. Publishing
 * creates the target path (and unpublishing removes it), as the spec asks of a plugin; nothing is
 * mounted.
 */
final class NodeService extends NodeGrpc.NodeImplBase {

  private final Script script;
  private final Responder responder;
  private final InMemoryDriver driver;

  NodeService(Script script, Responder responder, InMemoryDriver driver) {
    this.script = script;
    this.responder = responder;
    this.driver = driver;
  }

  @Override
  public void nodeGetCapabilities(
      NodeGetCapabilitiesRequest request, StreamObserver<NodeGetCapabilitiesResponse> observer) {
    responder.reply(observer, NodeGetCapabilitiesResponse.newBuilder()
        .addAllCapabilities(script.nodeCapabilities())
        .build());
  }

  @Override
  public void nodeGetInfo(NodeGetInfoRequest request, StreamObserver<NodeGetInfoResponse> observer) {
    responder.reply(observer, script.nodeInfo());
  }

  @Override
  public void nodeStageVolume(NodeStageVolumeRequest request, StreamObserver<NodeStageVolumeResponse> observer) {
    responder.answer(observer, () -> driver.nodeStage(request));
  }

  @Override
  public void nodeUnstageVolume(
      NodeUnstageVolumeRequest request, StreamObserver<NodeUnstageVolumeResponse> observer) {
    responder.answer(observer, () -> driver.nodeUnstage(request));
  }

  @Override
  public void nodePublishVolume(
      NodePublishVolumeRequest request, StreamObserver<NodePublishVolumeResponse> observer) {
    responder.answer(observer, () -> driver.nodePublish(request));
  }

  @Override
  public void nodeUnpublishVolume(
      NodeUnpublishVolumeRequest request, StreamObserver<NodeUnpublishVolumeResponse> observer) {
    responder.answer(observer, () -> driver.nodeUnpublish(request));
  }

  @Override
  public void nodeGetVolumeStats(
      NodeGetVolumeStatsRequest request, StreamObserver<NodeGetVolumeStatsResponse> observer) {
    responder.answer(observer, () -> driver.nodeGetVolumeStats(request));
  }

  @Override
  public void nodeExpandVolume(NodeExpandVolumeRequest request, StreamObserver<NodeExpandVolumeResponse> observer) {
    responder.answer(observer, () -> driver.nodeExpand(request));
  }
}
