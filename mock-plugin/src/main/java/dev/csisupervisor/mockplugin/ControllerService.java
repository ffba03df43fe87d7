package dev.csisupervisor.mockplugin;

import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesResponse;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import io.grpc.stub.StreamObserver;

/**
 * The CSI Controller service: capabilities only. Every other Controller RPC keeps the generated
 * default, {@code UNIMPLEMENTED}.
 */
final class ControllerService extends ControllerGrpc.ControllerImplBase {

    private final Script script;
    private final Responder responder;

    ControllerService(Script script, Responder responder) {
        this.script = script;
        this.responder = responder;
    }

    @Override
    public void controllerGetCapabilities(
            ControllerGetCapabilitiesRequest request, StreamObserver<ControllerGetCapabilitiesResponse> observer) {
        responder.reply(observer, ControllerGetCapabilitiesResponse.newBuilder()
                .addAllCapabilities(script.controllerCapabilities())
                .build());
    }
}
