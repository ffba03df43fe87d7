package dev.csisupervisor.mockplugin;

import com.google.protobuf.BoolValue;
import dev.csisupervisor.csi.v1.ProbeRequest;
import dev.csisupervisor.csi.v1.ProbeResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

/** The CSI Identity Probe, answering as the {@link Script} says. Runs on the event loop; never blocks. */
final class IdentityService {

  private final Script script;
  private final Responder responder;

  IdentityService(Script script, Responder responder) {
    this.script = script;
    this.responder = responder;
  }

  /** Probe: counted, then hung, failed or answered with the readiness of the moment, as scripted. */
  void probe(ProbeRequest request, StreamObserver<ProbeResponse> observer) {
    script.countProbe();
    script.beforeProbe();
    // A hung probe keeps its observer and returns: the event loop stays free.
    if (script.parkIfHanging(observer)) {
      return;
    }
    Status failure = script.probeFailure();
    if (failure != null) {
      responder.fail(observer, failure);
      return;
    }
    answer(observer);
  }

  /** Answers a probe with the readiness of this moment; also used to release parked probes. */
  void answer(StreamObserver<ProbeResponse> observer) {
    boolean ready = script.isReadyNow();
    responder.reply(observer, ready && script.omitReady()
        ? ProbeResponse.getDefaultInstance() // no ready field: the caller must assume ready
        : probeResponse(ready));
  }

  /** {@code ready} is a BoolValue: always set it, so "not ready" is never mistaken for "unset = ready". */
  static ProbeResponse probeResponse(boolean ready) {
    return ProbeResponse.newBuilder().setReady(BoolValue.of(ready)).build();
  }
}
