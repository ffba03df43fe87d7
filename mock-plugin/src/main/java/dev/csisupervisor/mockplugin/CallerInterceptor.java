package dev.csisupervisor.mockplugin;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.Optional;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the {@link Caller} headers of every call as it arrives: remembers them as the method's last caller
 * ({@link CallFaults#recordCaller}) and hands a Controller call that has them to {@code onControllerCall} (the
 * shared cloud's oracle), before the call's request is read and before any scripted fault. A call whose headers are
 * malformed (one without the other, a revision that is not a number >= 1) is answered {@code INVALID_ARGUMENT}
 * naming the header, and reaches nothing else. Runs on the event loop; thread-safe.
 */
final class CallerInterceptor implements ServerInterceptor {
  private static final Logger log = LoggerFactory.getLogger(CallerInterceptor.class);

  private static final Metadata.Key<String> AGENT = Metadata.Key.of(Caller.AGENT_HEADER,
      Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> ELECTION = Metadata.Key.of(Caller.ELECTION_HEADER,
      Metadata.ASCII_STRING_MARSHALLER);
  private static final String CONTROLLER_SERVICE = "csi.v1.Controller";

  private final CallFaults records;
  private final BiConsumer<Caller, String> onControllerCall;

  /**
   * @param records where each method's last caller is kept
   * @param onControllerCall told (caller, full method name) of each Controller call that names its caller; it may
   *     throw, which fails the call INTERNAL
   */
  CallerInterceptor(CallFaults records, BiConsumer<Caller, String> onControllerCall) {
    this.records = records;
    this.onControllerCall = onControllerCall;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
      ServerCallHandler<Q, R> next) {
    String method = call.getMethodDescriptor().getFullMethodName();
    Optional<Caller> caller;
    try {
      caller = Caller.fromHeaders(headers.get(AGENT), headers.get(ELECTION));
    } catch (IllegalArgumentException e) {
      call.close(Status.INVALID_ARGUMENT.withDescription(e.getMessage()), new Metadata());
      return new ServerCall.Listener<>() {};
    }
    records.recordCaller(method, caller.orElse(null));
    if (caller.isPresent() && CONTROLLER_SERVICE.equals(call.getMethodDescriptor().getServiceName())) {
      try {
        onControllerCall.accept(caller.get(), method);
      } catch (RuntimeException e) {
        log.warn("mock CSI plugin cannot record the controller call {} from {}", method, caller.get(), e);
        call.close(Status.INTERNAL.withDescription("cannot record the call's caller: " + e), new Metadata());
        return new ServerCall.Listener<>() {};
      }
    }
    return next.startCall(call, headers);
  }
}
