package dev.csisupervisor.mockplugin;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import io.grpc.MethodDescriptor;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * gRPC unary methods bound from a table of rows, one per RPC: the method and what answers it.
 * Every call first meets the per-RPC {@link CallFaults} (counted, its request kept, then failed,
 * hung, answered with a scripted response, or delayed), and only then reaches its handler: a
 * failed, hung or scripted call never touches the driver. Answers go through the {@link Responder} (scripted latency, failures as
 * statuses). Handlers run on the event loop and must not block (the one exception: with
 * {@link RealMounts}, the Node calls wait for {@code mount} and {@code umount}). Not thread-safe
 * while rows are added; build the services before serving them.
 *
 * <p>A delayed call on a volume is an operation in progress, as in a real driver that is slow: until
 * its handler has run, any other call on the same volume id fails with ABORTED, as the CSI spec
 * asks ("an operation is pending for the specified volume"), rather than overtaking it.
 */
final class ServiceTable {

  private final Responder responder;
  private final CallFaults faults;
  private final List<ServerMethodDefinition<?, ?>> rows = new ArrayList<>();

  ServiceTable(Responder responder, CallFaults faults) {
    this.responder = responder;
    this.faults = faults;
  }

  /** {@code method} replies with what {@code call} returns for the request, or fails with the status it throws. */
  <Q, R> ServiceTable answer(MethodDescriptor<Q, R> method, Function<Q, R> call) {
    return bind(method, (request, observer) -> responder.answer(observer, () -> call.apply(request)));
  }

  /** {@code method} replies with what {@code value} holds at the time of the call, whatever the request. */
  <Q, R> ServiceTable reply(MethodDescriptor<Q, R> method, Supplier<R> value) {
    return bind(method, (request, observer) -> responder.reply(observer, value.get()));
  }

  /** {@code method} is handled by {@code handler}, which completes the call itself. */
  <Q, R> ServiceTable bind(MethodDescriptor<Q, R> method, ServerCalls.UnaryMethod<Q, R> handler) {
    String name = method.getFullMethodName();
    ServerCalls.UnaryMethod<Q, R> scripted = (request, observer) -> {
      String volume = volumeIdOf(request);
      CallFaults.Action action = faults.onCall(name, request, volume);
      if (action.kind() == CallFaults.Kind.PROCEED && volume != null && faults.isPending(volume)) {
        responder.fail(observer, Status.ABORTED.withDescription(
            "an operation is pending for volume " + volume + " (" + name + " must be retried)"));
        return;
      }
      switch (action.kind()) {
        case FAIL -> responder.fail(observer, action.status());
        case REPLY -> responder.reply(observer, response(method, action));
        case HANG -> {
          if (!faults.park(observer)) {
            responder.fail(observer, Status.UNAVAILABLE.withDescription("mock CSI plugin stopping"));
          }
        }
        case PROCEED -> {
          if (action.delayNanos() == 0) {
            handler.invoke(request, observer);
          } else {
            // gRPC takes a cancel handler only while the call's own handler runs: the late
            // handler gets a plain observer, so it cannot try to set one.
            StreamObserver<R> plain = plain(observer);
            boolean marked = volume != null && faults.beginPending(volume);
            responder.after(action.delayNanos(), () -> {
              try {
                handler.invoke(request, plain);
              } finally {
                if (marked) {
                  faults.endPending(volume);
                }
              }
            });
          }
        }
      }
    };
    rows.add(ServerMethodDefinition.create(method, ServerCalls.asyncUnaryCall(scripted)));
    return this;
  }

  /** The request's {@code volume_id}, if its message has one and it is set. */
  private static String volumeIdOf(Object request) {
    if (request instanceof Message m) {
      FieldDescriptor field = m.getDescriptorForType().findFieldByName("volume_id");
      if (field != null && field.getJavaType() == FieldDescriptor.JavaType.STRING) {
        String id = (String) m.getField(field);
        return id.isEmpty() ? null : id;
      }
    }
    return null;
  }

  @SuppressWarnings("unchecked") // MockCsiPlugin.replyCalls takes only responses of the method's type
  private static <R> R response(MethodDescriptor<?, R> method, CallFaults.Action action) {
    return (R) action.response();
  }

  private static <R> StreamObserver<R> plain(StreamObserver<R> observer) {
    return new StreamObserver<>() {
      @Override
      public void onNext(R value) {
        observer.onNext(value);
      }

      @Override
      public void onError(Throwable t) {
        observer.onError(t);
      }

      @Override
      public void onCompleted() {
        observer.onCompleted();
      }
    };
  }

  /**
   * The rows of one service, as a definition to add to a server.
   *
   * @throws IllegalStateException if a method of the service has no row: none is left to answer
   *     {@code UNIMPLEMENTED} by omission
   */
  ServerServiceDefinition service(ServiceDescriptor descriptor) {
    ServerServiceDefinition.Builder service = ServerServiceDefinition.builder(descriptor);
    for (ServerMethodDefinition<?, ?> row : rows) {
      if (row.getMethodDescriptor().getServiceName().equals(descriptor.getName())) {
        service.addMethod(row);
      }
    }
    return service.build();
  }
}
