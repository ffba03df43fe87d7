package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.NodeGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.NodeGetInfoRequest;
import dev.csisupervisor.csi.v1.NodeGetInfoResponse;
import dev.csisupervisor.csi.v1.NodeGrpc;
import io.grpc.stub.StreamObserver;

/**
 * The CSI Node service: capabilities and node info only. Every other Node RPC keeps the generated
 * default, {@code UNIMPLEMENTED}.
 */
final class NodeService extends NodeGrpc.NodeImplBase {

    private final Script script;
    private final Responder responder;

    NodeService(Script script, Responder responder) {
        this.script = script;
        this.responder = responder;
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
}
