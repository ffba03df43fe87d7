package dev.csisupervisor.client;

import dev.csisupervisor.common.Values;
import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerGrpc;
import dev.csisupervisor.csi.v1.GetPluginCapabilitiesRequest;
import dev.csisupervisor.csi.v1.GetPluginInfoRequest;
import dev.csisupervisor.csi.v1.IdentityGrpc;
import dev.csisupervisor.csi.v1.NodeGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.NodeGetInfoRequest;
import dev.csisupervisor.csi.v1.NodeGrpc;
import dev.csisupervisor.csi.v1.ProbeRequest;
import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ClientCall;
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
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link CsiClient} over grpc-java with Netty epoll on a unix domain socket. See the interface for
 * the contract. This class runs the calls: deadlines, cancellation, typed errors. Its {@link PluginChannel}
 * keeps one live channel, replaces it only after a failed connection attempt, and watches for a lost
 * connection; {@link VolumeProtos} builds the volume calls' messages. A {@link #withCallerIdentity} view is another
 * instance on the same {@link PluginChannel} whose calls go through an interceptor adding the two
 * {@link CallerIdentity} headers.
 */
final class GrpcCsiClient implements CsiClient {
  private static final Logger log = LoggerFactory.getLogger(GrpcCsiClient.class);

  @FunctionalInterface
  private interface ResponseMapper<R, T> {
    T map(R response) throws CsiException;
  }

  /**
   * How long the re-asked HTTP/2 preface may wait for the peer's first bytes. It runs on a Netty I/O thread
   * that every plugin's calls share, so it is short: a server that broke the handshake answered at once.
   */
  private static final Duration PREFACE_ANSWER_WAIT = Duration.ofMillis(250);

  private final Path socket;
  private final CsiClientOptions options;
  private final StatusTranslator translator;
  private final PluginChannel channels;
  /** What every call carries as metadata; null: nothing (the client {@link #create} made). */
  private final CallerIdentity identity;
  /** Adds {@link #identity}'s headers to a call; null without an identity. */
  private final ClientInterceptor identityHeaders;
  /** A view's own close (see {@link CsiClient#withCallerIdentity}); the channel's is {@link #channels}'. */
  private final AtomicBoolean viewClosed = new AtomicBoolean();

  private GrpcCsiClient(Path socket, CsiClientOptions options) {
    this.socket = socket;
    this.options = options;
    this.translator = new StatusTranslator(socket, options, SocketInspector::tryConnect,
        peer -> SocketInspector.answerToHttp2Preface(peer, StatusTranslator.FIRST_BYTES, PREFACE_ANSWER_WAIT));
    this.channels = new PluginChannel(socket, options.maxInboundMessageBytes());
    this.identity = null;
    this.identityHeaders = null;
  }

  /** A view of {@code root}'s channel whose calls carry {@code identity}. */
  private GrpcCsiClient(GrpcCsiClient root, CallerIdentity identity) {
    this.socket = root.socket;
    this.options = root.options;
    this.translator = root.translator;
    this.channels = root.channels;
    this.identity = identity;
    Metadata headers = new Metadata();
    headers.put(AGENT_KEY, identity.agentHeaderValue());
    headers.put(ELECTION_KEY, Long.toString(identity.electionRevision()));
    this.identityHeaders = MetadataUtils.newAttachHeadersInterceptor(headers);
  }

  private static final Metadata.Key<String> AGENT_KEY =
      Metadata.Key.of(CallerIdentity.AGENT_HEADER, Metadata.ASCII_STRING_MARSHALLER);
  private static final Metadata.Key<String> ELECTION_KEY =
      Metadata.Key.of(CallerIdentity.ELECTION_HEADER, Metadata.ASCII_STRING_MARSHALLER);

  static CsiClient create(Path socket, CsiClientOptions options) throws SocketPathTooLongException {
    Objects.requireNonNull(socket, "socket");
    Objects.requireNonNull(options, "options");
    Path absolute = SocketInspector.validate(socket);
    SharedEventLoop.group(); // fail here, not on the first call, if epoll is missing
    return new GrpcCsiClient(absolute, options);
  }

  @Override
  public CsiClient withCallerIdentity(String agentNodeId, long electionRevision) {
    return new GrpcCsiClient(this, new CallerIdentity(agentNodeId, electionRevision));
  }

  @Override
  public Optional<CallerIdentity> callerIdentity() {
    return Optional.ofNullable(identity);
  }

  @Override
  public void onConnectionLost(Runnable listener) {
    channels.onConnectionLost(listener);
  }

  @Override
  public Path socket() {
    return socket;
  }

  @Override
  public CompletableFuture<ProbeResult> probeAsync() {
    return call(IdentityGrpc.getProbeMethod(), ProbeRequest.getDefaultInstance(), ProtoMapping::probe);
  }

  @Override
  public CompletableFuture<CsiPluginInfo> pluginInfoAsync() {
    return pluginInfo(options.callTimeout());
  }

  @Override
  public CompletableFuture<Set<String>> pluginCapabilitiesAsync() {
    return pluginCapabilities(options.callTimeout());
  }

  @Override
  public CompletableFuture<Set<String>> controllerCapabilitiesAsync() {
    return controllerCapabilities(options.callTimeout());
  }

  @Override
  public CompletableFuture<Set<String>> nodeCapabilitiesAsync() {
    return nodeCapabilities(options.callTimeout());
  }

  @Override
  public CompletableFuture<CsiNodeInfo> nodeInfoAsync() {
    return nodeInfo(options.callTimeout());
  }

  /** The same calls as the interface's default, each with the fingerprint timeout. */
  @Override
  public CompletableFuture<PluginFingerprint> fingerprintAsync(PluginKind kind) {
    Objects.requireNonNull(kind, "kind");
    Duration t = options.fingerprintTimeout();
    return Fingerprints.gather(kind, () -> pluginInfo(t), () -> pluginCapabilities(t),
        () -> controllerCapabilities(t), () -> nodeCapabilities(t), () -> nodeInfo(t));
  }

  private CompletableFuture<CsiPluginInfo> pluginInfo(Duration timeout) {
    return call(IdentityGrpc.getGetPluginInfoMethod(), GetPluginInfoRequest.getDefaultInstance(),
        r -> ProtoMapping.pluginInfo(socket, CsiMethods.GET_PLUGIN_INFO, r), timeout);
  }

  private CompletableFuture<Set<String>> pluginCapabilities(Duration timeout) {
    return call(IdentityGrpc.getGetPluginCapabilitiesMethod(),
        GetPluginCapabilitiesRequest.getDefaultInstance(), ProtoMapping::pluginCapabilities, timeout);
  }

  private CompletableFuture<Set<String>> controllerCapabilities(Duration timeout) {
    return call(ControllerGrpc.getControllerGetCapabilitiesMethod(),
        ControllerGetCapabilitiesRequest.getDefaultInstance(), ProtoMapping::controllerCapabilities,
        timeout);
  }

  private CompletableFuture<Set<String>> nodeCapabilities(Duration timeout) {
    return call(NodeGrpc.getNodeGetCapabilitiesMethod(),
        NodeGetCapabilitiesRequest.getDefaultInstance(), ProtoMapping::nodeCapabilities, timeout);
  }

  private CompletableFuture<CsiNodeInfo> nodeInfo(Duration timeout) {
    return call(NodeGrpc.getNodeGetInfoMethod(), NodeGetInfoRequest.getDefaultInstance(),
        r -> ProtoMapping.nodeInfo(socket, CsiMethods.NODE_GET_INFO, r), timeout);
  }

  // ---- volumes ----

  @Override
  public CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(NodeGrpc.getNodeStageVolumeMethod(), VolumeProtos.nodeStage(r), response -> null);
  }

  @Override
  public CompletableFuture<Void> nodeUnstageVolumeAsync(String volumeId, Path stagingPath) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(stagingPath, "stagingPath");
    return volumeCall(NodeGrpc.getNodeUnstageVolumeMethod(), VolumeProtos.nodeUnstage(volumeId, stagingPath),
        response -> null);
  }

  @Override
  public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(NodeGrpc.getNodePublishVolumeMethod(), VolumeProtos.nodePublish(r), response -> null);
  }

  @Override
  public CompletableFuture<Void> nodeUnpublishVolumeAsync(String volumeId, Path targetPath) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(targetPath, "targetPath");
    return volumeCall(NodeGrpc.getNodeUnpublishVolumeMethod(), VolumeProtos.nodeUnpublish(volumeId, targetPath),
        response -> null);
  }

  @Override
  public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String volumeId, Path volumePath,
      Optional<Path> stagingPath) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(volumePath, "volumePath");
    Objects.requireNonNull(stagingPath, "stagingPath");
    return volumeCall(NodeGrpc.getNodeGetVolumeStatsMethod(),
        VolumeProtos.nodeGetVolumeStats(volumeId, volumePath, stagingPath), VolumeProtos::stats);
  }

  @Override
  public CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(NodeGrpc.getNodeExpandVolumeMethod(), VolumeProtos.nodeExpand(r), response -> VolumeProtos.capacity(socket,
        NodeGrpc.getNodeExpandVolumeMethod().getFullMethodName(), "capacity_bytes", response.getCapacityBytes()));
  }

  @Override
  public CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getCreateVolumeMethod(), VolumeProtos.createVolume(r),
        response -> VolumeProtos.volume(socket, CsiMethods.CREATE_VOLUME, response));
  }

  @Override
  public CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getDeleteVolumeMethod(), VolumeProtos.deleteVolume(volumeId, secrets),
        response -> null);
  }

  @Override
  public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(ControllerPublishRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getControllerPublishVolumeMethod(), VolumeProtos.controllerPublish(r),
        response -> Values.copyOf(response.getPublishContextMap(), "publishContext"));
  }

  @Override
  public CompletableFuture<Void> controllerUnpublishVolumeAsync(String volumeId, String nodeId, Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireNonBlank(nodeId, "nodeId");
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getControllerUnpublishVolumeMethod(),
        VolumeProtos.controllerUnpublish(volumeId, nodeId, secrets), response -> null);
  }

  @Override
  public CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String volumeId,
      CapacityRange capacityRange, Optional<VolumeCapability> capability, Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Objects.requireNonNull(capacityRange, "capacityRange");
    Objects.requireNonNull(capability, "capability");
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getControllerExpandVolumeMethod(),
        VolumeProtos.controllerExpand(volumeId, capacityRange, capability, secrets),
        response -> new ControllerExpandResult(VolumeProtos.capacity(socket,
            ControllerGrpc.getControllerExpandVolumeMethod().getFullMethodName(), "capacity_bytes",
            response.getCapacityBytes()), response.getNodeExpansionRequired()));
  }

  @Override
  public CompletableFuture<CsiSnapshot> createSnapshotAsync(CreateSnapshotRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getCreateSnapshotMethod(), ControllerProtos.createSnapshot(r),
        response -> ControllerProtos.snapshot(socket, CsiMethods.CREATE_SNAPSHOT, "snapshot", response.hasSnapshot(),
            response.getSnapshot()));
  }

  @Override
  public CompletableFuture<Void> deleteSnapshotAsync(String snapshotId, Secrets secrets) {
    Values.requireNonBlank(snapshotId, "snapshotId");
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getDeleteSnapshotMethod(), ControllerProtos.deleteSnapshot(snapshotId, secrets),
        response -> null);
  }

  @Override
  public CompletableFuture<SnapshotPage> listSnapshotsAsync(ListSnapshotsRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getListSnapshotsMethod(), ControllerProtos.listSnapshots(r),
        response -> ControllerProtos.snapshotPage(socket, CsiMethods.LIST_SNAPSHOTS, response));
  }

  @Override
  public CompletableFuture<VolumePage> listVolumesAsync(int maxEntries, Optional<String> startingToken) {
    ControllerArguments.paging(maxEntries, startingToken);
    return volumeCall(ControllerGrpc.getListVolumesMethod(), ControllerProtos.listVolumes(maxEntries, startingToken),
        response -> ControllerProtos.volumePage(socket, CsiMethods.LIST_VOLUMES, response));
  }

  @Override
  public CompletableFuture<VolumeEntry> controllerGetVolumeAsync(String volumeId) {
    Values.requireNonBlank(volumeId, "volumeId");
    return volumeCall(ControllerGrpc.getControllerGetVolumeMethod(),
        dev.csisupervisor.csi.v1.ControllerGetVolumeRequest.newBuilder().setVolumeId(volumeId).build(),
        response -> ControllerProtos.volumeEntry(socket, CsiMethods.CONTROLLER_GET_VOLUME, response));
  }

  @Override
  public CompletableFuture<ValidationResult> validateVolumeCapabilitiesAsync(ValidateCapabilitiesRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getValidateVolumeCapabilitiesMethod(), ControllerProtos.validate(r),
        response -> ControllerProtos.validation(socket, CsiMethods.VALIDATE_VOLUME_CAPABILITIES, response));
  }

  @Override
  public CompletableFuture<CsiCapacity> getCapacityAsync(CapacityRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getGetCapacityMethod(), ControllerProtos.capacity(r),
        response -> ControllerProtos.capacity(socket, CsiMethods.GET_CAPACITY, response));
  }

  @Override
  public CompletableFuture<Void> controllerModifyVolumeAsync(String volumeId, Map<String, String> mutableParameters,
      Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Map<String, String> mutable = ControllerArguments.mutableParameters(mutableParameters, true);
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getControllerModifyVolumeMethod(),
        ControllerProtos.modify(volumeId, mutable, secrets), response -> null);
  }

  private <Q, R, T> CompletableFuture<T> volumeCall(MethodDescriptor<Q, R> method, Q request, ResponseMapper<R, T> mapper) {
    return call(method, request, mapper, options.volumeCallTimeout());
  }

  private <Q, R, T> CompletableFuture<T> call(
      MethodDescriptor<Q, R> method, Q request, ResponseMapper<R, T> mapper) {
    return call(method, request, mapper, options.callTimeout());
  }

  private <Q, R, T> CompletableFuture<T> call(
      MethodDescriptor<Q, R> method, Q request, ResponseMapper<R, T> mapper, Duration timeout) {
    CompletableFuture<T> result = new CompletableFuture<>();
    Deadline deadline = Deadline.after(timeout.toNanos(), TimeUnit.NANOSECONDS);
    start(method, request, mapper, result, deadline, timeout, true);
    return result;
  }

  private <Q, R, T> void start(
      MethodDescriptor<Q, R> method,
      Q request,
      ResponseMapper<R, T> mapper,
      CompletableFuture<T> result,
      Deadline deadline,
      Duration timeout,
      boolean mayRetry) {
    String name = method.getFullMethodName();
    if (viewClosed.get()) {
      result.completeExceptionally(new CallCancelledException(socket, name, "this view of the client (caller "
          + identity + ") is closed"));
      return;
    }
    ManagedChannel ch;
    try {
      ch = channels.forCall(name);
    } catch (CsiException e) {
      result.completeExceptionally(e);
      return;
    }
    ConnectionTracer tracer = new ConnectionTracer();
    // waitForReady stays off: a call on a channel that cannot connect fails now, not at its deadline.
    CallOptions callOptions = CallOptions.DEFAULT.withDeadline(deadline).withStreamTracerFactory(tracer);
    Channel target = identityHeaders == null ? ch : ClientInterceptors.intercept(ch, identityHeaders);
    ClientCall<Q, R> call = target.newCall(method, callOptions);
    result.whenComplete((value, failure) -> {
      if (failure instanceof CancellationException) {
        call.cancel("cancelled by the caller", null);
      }
    });
    StreamObserver<R> observer = new StreamObserver<>() {
      private R response;

      @Override
      public void onNext(R value) {
        response = value;
      }

      @Override
      public void onError(Throwable t) {
        Status status = Status.fromThrowable(t);
        boolean connected = tracer.connected();
        if (channels.isClosed()) {
          result.completeExceptionally(new CallCancelledException(socket, name, "the client is closed"));
          return;
        }
        if (!connected && mayRetry && ch.isShutdown() && status.getCode() == Status.Code.UNAVAILABLE
            && status.getCause() == null) { // gRPC's own "channel shut down", not a refusal of this call
          // Another call replaced this channel between our getting it and starting: use the new one.
          start(method, request, mapper, result, deadline, timeout, false);
          return;
        }
        if (!connected) {
          // The connection attempt failed or never finished. gRPC would now fail every call on this
          // channel with the same error until its reconnect backoff expires (about 1 s, growing),
          // even after resetConnectBackoff(): the next call must get a fresh channel instead.
          channels.retire(ch);
        }
        if (connected && status.getCode() == Status.Code.DEADLINE_EXCEEDED && !deadline.isExpired()) {
          // Not our deadline: the plugin answered DEADLINE_EXCEEDED itself (say, its storage
          // backend timed out). That is its answer, code and message, like any status it sends.
          result.completeExceptionally(new CsiStatusException(socket, name, StatusCode.DEADLINE_EXCEEDED,
              status.getDescription()));
          return;
        }
        result.completeExceptionally(translator.translate(name, status, connected, timeout));
      }

      @Override
      public void onCompleted() {
        if (response == null) {
          result.completeExceptionally(
              new InvalidResponseException(socket, name, "the call completed without a response message"));
          return;
        }
        try {
          result.complete(mapper.map(response));
        } catch (CsiException | RuntimeException e) {
          result.completeExceptionally(e);
        }
      }
    };
    try {
      ClientCalls.asyncUnaryCall(call, request, observer);
    } catch (RuntimeException e) {
      result.completeExceptionally(e);
    }
  }

  @Override
  public void close() {
    if (identity != null) {
      viewClosed.set(true); // a view: the channel is its root's
      return;
    }
    if (channels.close()) {
      log.debug("closed client for {}", socket);
    }
  }

  /** The channel new calls use now; for tests of reuse and replacement. */
  ManagedChannel currentChannel() {
    return channels.current();
  }

  @Override
  public String toString() {
    return "CsiClient[" + socket + (identity != null ? ", caller " + identity : "") + ", "
        + (channels.isClosed() || viewClosed.get() ? "CLOSED" : "RUNNING") + "]";
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
