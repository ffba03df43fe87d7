package dev.csisupervisor.client;

import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ClientStreamTracer;
import io.grpc.Deadline;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs the unary calls of one {@link GrpcCsiClient} on its {@link PluginChannel}: the deadline, cancellation by the
 * caller, one retry on a channel replaced under the call, the retirement of a channel whose connection attempt
 * failed, and the translation of a failure into the {@link CsiException} that says what happened.
 *
 * <p>A {@link #withIdentity} copy shares the channel and the translator; its calls go through an interceptor adding
 * the two {@link CallerIdentity} headers, and it has a close of its own ({@link #closeView}).
 *
 * <p>Thread-safe. Each call's future is completed on the gRPC thread that ends the call (or on the caller's thread
 * if it cannot start).
 */
final class UnaryCalls {
  /** Maps a call's one response message to its result; may refuse a malformed response. */
  @FunctionalInterface
  interface ResponseMapper<R, T> {
    T map(R response) throws CsiException;
  }

  /**
   * How long the re-asked HTTP/2 preface may wait for the peer's first bytes. It runs on a Netty I/O thread
   * that every plugin's calls share, so it is short: a server that broke the handshake answered at once.
   */
  private static final Duration PREFACE_ANSWER_WAIT = Duration.ofMillis(250);

  private static final Metadata.Key<String> AGENT_KEY =
      Metadata.Key.of(CallerIdentity.AGENT_HEADER, Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> ELECTION_KEY =
      Metadata.Key.of(CallerIdentity.ELECTION_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  private final Path socket;
  private final StatusTranslator translator;
  private final PluginChannel channels;
  /** What every call carries as metadata; null: nothing (the root's calls). */
  private final CallerIdentity identity;
  /** Adds {@link #identity}'s headers to a call; null without an identity. */
  private final ClientInterceptor identityHeaders;
  /** A view's own close (see {@link CsiClient#withCallerIdentity}); the channel's is {@link #channels}'. */
  private final AtomicBoolean viewClosed = new AtomicBoolean();

  UnaryCalls(Path socket, CsiClientOptions options, PluginChannel channels) {
    this.socket = socket;
    this.translator = new StatusTranslator(socket, options, SocketInspector::tryConnect,
        peer -> SocketInspector.answerToHttp2Preface(peer, StatusTranslator.FIRST_BYTES, PREFACE_ANSWER_WAIT));
    this.channels = channels;
    this.identity = null;
    this.identityHeaders = null;
  }

  private UnaryCalls(UnaryCalls root, CallerIdentity identity) {
    this.socket = root.socket;
    this.translator = root.translator;
    this.channels = root.channels;
    this.identity = identity;
    Metadata headers = new Metadata();
    headers.put(AGENT_KEY, identity.agentHeaderValue());
    headers.put(ELECTION_KEY, Long.toString(identity.electionRevision()));
    this.identityHeaders = MetadataUtils.newAttachHeadersInterceptor(headers);
  }

  /** Calls on the same channel whose requests carry {@code identity}. */
  UnaryCalls withIdentity(CallerIdentity identity) {
    return new UnaryCalls(this, identity);
  }

  Optional<CallerIdentity> identity() {
    return Optional.ofNullable(identity);
  }

  /** Ends this view's calls (new ones fail at once); the channel stays its root's. */
  void closeView() {
    viewClosed.set(true);
  }

  boolean viewClosed() {
    return viewClosed.get();
  }

  /** Starts {@code method} with {@code request}; its result, or the failure, within {@code timeout}. */
  <Q, R, T> CompletableFuture<T> call(MethodDescriptor<Q, R> method, Q request, ResponseMapper<R, T> mapper,
      Duration timeout) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Deadline deadline = Deadline.after(timeout.toNanos(), TimeUnit.NANOSECONDS);
    start(new Attempt<>(method, request, mapper, result, deadline, timeout), true);
    return result;
  }

  /** One call's fixed parts, the same for its retry. */
  private record Attempt<Q, R, T>(MethodDescriptor<Q, R> method, Q request, ResponseMapper<R, T> mapper,
      CompletableFuture<T> result, Deadline deadline, Duration timeout) {
    String name() {
      return method.getFullMethodName();
    }
  }

  private <Q, R, T> void start(Attempt<Q, R, T> attempt, boolean mayRetry) {
    if (viewClosed.get()) {
      attempt.result().completeExceptionally(new CallCancelledException(socket, attempt.name(),
          "this view of the client (caller " + identity + ") is closed"));
      return;
    }
    ManagedChannel ch;
    try {
      ch = channels.forCall(attempt.name());
    } catch (CsiException e) {
      attempt.result().completeExceptionally(e);
      return;
    }
    ConnectionTracer tracer = new ConnectionTracer();
    ClientCall<Q, R> call = newCall(ch, attempt, tracer);
    attempt.result().whenComplete((value, failure) -> {
      if (failure instanceof CancellationException) {
        call.cancel("cancelled by the caller", null);
      }
    });
    try {
      ClientCalls.asyncUnaryCall(call, attempt.request(), new Observer<>(attempt, ch, tracer, mayRetry));
    } catch (RuntimeException e) {
      attempt.result().completeExceptionally(e);
    }
  }

  private <Q, R> ClientCall<Q, R> newCall(ManagedChannel ch, Attempt<Q, R, ?> attempt, ConnectionTracer tracer) {
    // waitForReady stays off: a call on a channel that cannot connect fails now, not at its deadline.
    CallOptions callOptions = CallOptions.DEFAULT.withDeadline(attempt.deadline()).withStreamTracerFactory(tracer);
    Channel target = identityHeaders == null ? ch : ClientInterceptors.intercept(ch, identityHeaders);
    return target.newCall(attempt.method(), callOptions);
  }

  /** Ends one attempt: its response mapped, or its failure translated (or the call retried once). */
  private final class Observer<Q, R, T> implements StreamObserver<R> {
    private final Attempt<Q, R, T> attempt;
    private final ManagedChannel ch;
    private final ConnectionTracer tracer;
    private final boolean mayRetry;
    private R response;

    Observer(Attempt<Q, R, T> attempt, ManagedChannel ch, ConnectionTracer tracer, boolean mayRetry) {
      this.attempt = attempt;
      this.ch = ch;
      this.tracer = tracer;
      this.mayRetry = mayRetry;
    }

    @Override
    public void onNext(R value) {
      response = value;
    }

    @Override
    public void onError(Throwable t) {
      Status status = Status.fromThrowable(t);
      boolean connected = tracer.connected();
      if (channels.isClosed()) {
        attempt.result().completeExceptionally(new CallCancelledException(socket, attempt.name(),
            "the client is closed"));
        return;
      }
      if (!connected && mayRetry && channelReplaced(status)) {
        // Another call replaced this channel between our getting it and starting: use the new one.
        start(attempt, false);
        return;
      }
      if (!connected) {
        // The connection attempt failed or never finished. gRPC would now fail every call on this
        // channel with the same error until its reconnect backoff expires (about 1 s, growing),
        // even after resetConnectBackoff(): the next call must get a fresh channel instead.
        channels.retire(ch);
      }
      attempt.result().completeExceptionally(failure(status, connected));
    }

    /** gRPC's own "channel shut down", not a refusal of this call. */
    private boolean channelReplaced(Status status) {
      return ch.isShutdown() && status.getCode() == Status.Code.UNAVAILABLE && status.getCause() == null;
    }

    private CsiException failure(Status status, boolean connected) {
      if (connected && status.getCode() == Status.Code.DEADLINE_EXCEEDED && !attempt.deadline().isExpired()) {
        // Not our deadline: the plugin answered DEADLINE_EXCEEDED itself (say, its storage
        // backend timed out). That is its answer, code and message, like any status it sends.
        return new CsiStatusException(socket, attempt.name(), StatusCode.DEADLINE_EXCEEDED, status.getDescription());
      }
      return translator.translate(attempt.name(), status, connected, attempt.timeout());
    }

    @Override
    public void onCompleted() {
      if (response == null) {
        attempt.result().completeExceptionally(
            new InvalidResponseException(socket, attempt.name(), "the call completed without a response message"));
        return;
      }
      try {
        attempt.result().complete(attempt.mapper().map(response));
      } catch (CsiException | RuntimeException e) {
        attempt.result().completeExceptionally(e);
      }
    }
  }

  /**
   * Records whether the call got a stream on a real transport, which gRPC only creates once the
   * connection is up (the server's HTTP/2 SETTINGS arrived): it tells a failed connection attempt
   * from a failure after the request was sent.
   */
  private static final class ConnectionTracer extends ClientStreamTracer.Factory {
    private volatile boolean connected;

    @Override
    public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
      return new ClientStreamTracer() {
        @Override
        public void streamCreated(Attributes transportAttrs, Metadata headers) {
          connected = true;
        }
      };
    }

    boolean connected() {
      return connected;
    }
  }
}
