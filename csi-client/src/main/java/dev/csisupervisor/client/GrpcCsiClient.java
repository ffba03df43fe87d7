package dev.csisupervisor.client;

import dev.csisupervisor.csi.v1.ControllerGetCapabilitiesRequest;
import dev.csisupervisor.csi.v1.ControllerExpandVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerPublishVolumeRequest;
import dev.csisupervisor.csi.v1.ControllerUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.DeleteVolumeRequest;
import dev.csisupervisor.csi.v1.NodeExpandVolumeRequest;
import dev.csisupervisor.csi.v1.NodeGetVolumeStatsRequest;
import dev.csisupervisor.csi.v1.NodePublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeStageVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnpublishVolumeRequest;
import dev.csisupervisor.csi.v1.NodeUnstageVolumeRequest;
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
import io.grpc.ClientCall;
import io.grpc.ClientStreamTracer;
import io.grpc.ConnectivityState;
import io.grpc.Deadline;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.channel.ChannelOption;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link CsiClient} over grpc-java with Netty epoll on a unix domain socket. See the interface for
 * the contract; this class keeps one live channel and replaces it only after a failed connection
 * attempt.
 */
final class GrpcCsiClient implements CsiClient {
  private static final Logger log = LoggerFactory.getLogger(GrpcCsiClient.class);

  /** How long close() lets calls in flight finish before cancelling them. */
  private static final long CLOSE_GRACE_MILLIS = 200;
  private static final long CLOSE_FORCED_MILLIS = 1000;

  private enum State { RUNNING, CLOSED }

  @FunctionalInterface
  private interface ResponseMapper<R, T> {
    T map(R response) throws CsiException;
  }

  private final Path socket;
  private final CsiClientOptions options;
  private final StatusTranslator translator;
  private final AtomicReference<State> state = new AtomicReference<>(State.RUNNING);

  private final Object lock = new Object();
  /** The channel new calls use. Read without the lock; replaced under it. */
  private volatile ManagedChannel channel;
  /** Replaced channels that may still have calls running out their deadline; guarded by lock. */
  private final List<ManagedChannel> retired = new ArrayList<>();

  /** Told when an established connection is lost; see {@link #onConnectionLost}. */
  private final List<Runnable> lostListeners = new CopyOnWriteArrayList<>();

  private GrpcCsiClient(Path socket, CsiClientOptions options) {
    this.socket = socket;
    this.options = options;
    this.translator = new StatusTranslator(socket, options, SocketInspector::tryConnect,
        peer -> SocketInspector.answerToHttp2Preface(peer, StatusTranslator.FIRST_BYTES, options.callTimeout()));
    this.channel = newChannel();
  }

  static CsiClient create(Path socket, CsiClientOptions options) throws SocketPathTooLongException {
    Objects.requireNonNull(socket, "socket");
    Objects.requireNonNull(options, "options");
    Path absolute = SocketInspector.validate(socket);
    SharedEventLoop.group(); // fail here, not on the first call, if epoll is missing
    return new GrpcCsiClient(absolute, options);
  }

  private ManagedChannel newChannel() {
    ManagedChannel ch = buildChannel();
    watchConnectivity(ch, ConnectivityState.IDLE);
    return ch;
  }

  /**
   * Follows {@code ch}'s connectivity for its whole life: leaving READY for anything but SHUTDOWN (ours) means
   * the connection was lost. With no idle timeout set, gRPC's 30-minute default keeps a probed channel READY,
   * so leaving READY never means "idle".
   */
  private void watchConnectivity(ManagedChannel ch, ConnectivityState seen) {
    ConnectivityState now = ch.getState(false);
    if (now == ConnectivityState.SHUTDOWN) {
      return;
    }
    if (seen == ConnectivityState.READY && now != ConnectivityState.READY && ch == channel
        && state.get() == State.RUNNING) {
      for (Runnable listener : lostListeners) {
        try {
          listener.run();
        } catch (RuntimeException e) {
          log.warn("a connection-lost listener of {} threw", socket, e);
        }
      }
    }
    ch.notifyWhenStateChanged(now, () -> watchConnectivity(ch, now));
  }

  @Override
  public void onConnectionLost(Runnable listener) {
    lostListeners.add(Objects.requireNonNull(listener, "listener"));
  }

  private ManagedChannel buildChannel() {
    return NettyChannelBuilder.forAddress(new DomainSocketAddress(socket.toString()))
        .channelType(EpollDomainSocketChannel.class)
        .eventLoopGroup(SharedEventLoop.group())
        .usePlaintext()
        // The default authority would be the socket path; plugins expect a host name.
        .overrideAuthority("localhost")
        .maxInboundMessageSize(options.maxInboundMessageBytes())
        // gRPC sets SO_KEEPALIVE, which unix sockets do not have (Netty warns on every connect).
        .withOption(ChannelOption.SO_KEEPALIVE, null)
        // A probe that fails is the caller's to retry, on its own schedule.
        .disableRetry()
        // Callbacks run on the shared I/O threads: completing a future is all they do, and
        // gRPC's default cached pool would otherwise grow a thread per concurrent call
        // (1000 supervised plugins probing at once means hundreds of threads).
        .directExecutor()
        .build();
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
    return volumeCall(NodeGrpc.getNodeStageVolumeMethod(), NodeStageVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .putAllPublishContext(r.publishContext())
        .setStagingTargetPath(r.stagingPath().toString())
        .setVolumeCapability(VolumeProtos.capability(r.capability()))
        .putAllSecrets(r.secrets().reveal())
        .putAllVolumeContext(r.volumeContext())
        .build(), response -> null);
  }

  @Override
  public CompletableFuture<Void> nodeUnstageVolumeAsync(String volumeId, Path stagingPath) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(stagingPath, "stagingPath");
    return volumeCall(NodeGrpc.getNodeUnstageVolumeMethod(), NodeUnstageVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setStagingTargetPath(stagingPath.toString()).build(), response -> null);
  }

  @Override
  public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest r) {
    Objects.requireNonNull(r, "request");
    NodePublishVolumeRequest.Builder q = NodePublishVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .putAllPublishContext(r.publishContext())
        .setTargetPath(r.targetPath().toString())
        .setVolumeCapability(VolumeProtos.capability(r.capability()))
        .setReadonly(r.readOnly())
        .putAllSecrets(r.secrets().reveal())
        .putAllVolumeContext(r.volumeContext());
    r.stagingPath().ifPresent(p -> q.setStagingTargetPath(p.toString()));
    return volumeCall(NodeGrpc.getNodePublishVolumeMethod(), q.build(), response -> null);
  }

  @Override
  public CompletableFuture<Void> nodeUnpublishVolumeAsync(String volumeId, Path targetPath) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(targetPath, "targetPath");
    return volumeCall(NodeGrpc.getNodeUnpublishVolumeMethod(), NodeUnpublishVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setTargetPath(targetPath.toString()).build(), response -> null);
  }

  @Override
  public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String volumeId, Path volumePath,
      Optional<Path> stagingPath) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireAbsolute(volumePath, "volumePath");
    Objects.requireNonNull(stagingPath, "stagingPath");
    NodeGetVolumeStatsRequest.Builder q = NodeGetVolumeStatsRequest.newBuilder()
        .setVolumeId(volumeId).setVolumePath(volumePath.toString());
    stagingPath.ifPresent(p -> q.setStagingTargetPath(p.toString()));
    return volumeCall(NodeGrpc.getNodeGetVolumeStatsMethod(), q.build(), VolumeProtos::stats);
  }

  @Override
  public CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest r) {
    Objects.requireNonNull(r, "request");
    NodeExpandVolumeRequest.Builder q = NodeExpandVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .setVolumePath(r.volumePath().toString())
        .setCapacityRange(VolumeProtos.range(r.capacityRange()))
        .putAllSecrets(r.secrets().reveal());
    r.stagingPath().ifPresent(p -> q.setStagingTargetPath(p.toString()));
    r.capability().ifPresent(c -> q.setVolumeCapability(VolumeProtos.capability(c)));
    return volumeCall(NodeGrpc.getNodeExpandVolumeMethod(), q.build(), response -> VolumeProtos.capacity(socket,
        NodeGrpc.getNodeExpandVolumeMethod().getFullMethodName(), "capacity_bytes", response.getCapacityBytes()));
  }

  @Override
  public CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest r) {
    Objects.requireNonNull(r, "request");
    dev.csisupervisor.csi.v1.CreateVolumeRequest.Builder q = dev.csisupervisor.csi.v1.CreateVolumeRequest.newBuilder()
        .setName(r.name())
        .putAllParameters(r.parameters())
        .putAllSecrets(r.secrets().reveal());
    r.capacityRange().ifPresent(c -> q.setCapacityRange(VolumeProtos.range(c)));
    r.capabilities().forEach(c -> q.addVolumeCapabilities(VolumeProtos.capability(c)));
    return volumeCall(ControllerGrpc.getCreateVolumeMethod(), q.build(),
        response -> VolumeProtos.volume(socket, CsiMethods.CREATE_VOLUME, response));
  }

  @Override
  public CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getDeleteVolumeMethod(), DeleteVolumeRequest.newBuilder()
        .setVolumeId(volumeId).putAllSecrets(secrets.reveal()).build(), response -> null);
  }

  @Override
  public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(ControllerPublishRequest r) {
    Objects.requireNonNull(r, "request");
    return volumeCall(ControllerGrpc.getControllerPublishVolumeMethod(), ControllerPublishVolumeRequest.newBuilder()
        .setVolumeId(r.volumeId())
        .setNodeId(r.nodeId())
        .setVolumeCapability(VolumeProtos.capability(r.capability()))
        .setReadonly(r.readOnly())
        .putAllSecrets(r.secrets().reveal())
        .putAllVolumeContext(r.volumeContext())
        .build(), response -> Values.copyOf(response.getPublishContextMap(), "publishContext"));
  }

  @Override
  public CompletableFuture<Void> controllerUnpublishVolumeAsync(String volumeId, String nodeId, Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Values.requireNonBlank(nodeId, "nodeId");
    Objects.requireNonNull(secrets, "secrets");
    return volumeCall(ControllerGrpc.getControllerUnpublishVolumeMethod(), ControllerUnpublishVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setNodeId(nodeId).putAllSecrets(secrets.reveal()).build(), response -> null);
  }

  @Override
  public CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String volumeId,
      CapacityRange capacityRange, Optional<VolumeCapability> capability, Secrets secrets) {
    Values.requireNonBlank(volumeId, "volumeId");
    Objects.requireNonNull(capacityRange, "capacityRange");
    Objects.requireNonNull(capability, "capability");
    Objects.requireNonNull(secrets, "secrets");
    ControllerExpandVolumeRequest.Builder q = ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(volumeId)
        .setCapacityRange(VolumeProtos.range(capacityRange))
        .putAllSecrets(secrets.reveal());
    capability.ifPresent(c -> q.setVolumeCapability(VolumeProtos.capability(c)));
    return volumeCall(ControllerGrpc.getControllerExpandVolumeMethod(), q.build(),
        response -> new ControllerExpandResult(VolumeProtos.capacity(socket,
            ControllerGrpc.getControllerExpandVolumeMethod().getFullMethodName(), "capacity_bytes",
            response.getCapacityBytes()), response.getNodeExpansionRequired()));
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
    ManagedChannel ch;
    try {
      ch = channelForCall(name);
    } catch (CsiException e) {
      result.completeExceptionally(e);
      return;
    }
    ConnectionTracer tracer = new ConnectionTracer();
    // waitForReady stays off: a call on a channel that cannot connect fails now, not at its deadline.
    CallOptions callOptions = CallOptions.DEFAULT.withDeadline(deadline).withStreamTracerFactory(tracer);
    ClientCall<Q, R> call = ch.newCall(method, callOptions);
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
        if (state.get() == State.CLOSED) {
          result.completeExceptionally(new CallCancelledException(socket, name, "the client is closed"));
          return;
        }
        if (!connected && mayRetry && ch.isShutdown() && status.getCode() == Status.Code.UNAVAILABLE) {
          // Another call replaced this channel between our getting it and starting: use the new one.
          start(method, request, mapper, result, deadline, timeout, false);
          return;
        }
        if (!connected) {
          // The connection attempt failed or never finished. gRPC would now fail every call on this
          // channel with the same error until its reconnect backoff expires (about 1 s, growing),
          // even after resetConnectBackoff(): the next call must get a fresh channel instead.
          retire(ch);
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

  /**
   * The channel for a new call. While connected, just the current channel. Otherwise, Step 1:
   * stat the path, so a missing path, a non-socket or a permission problem is reported precisely
   * without connecting; Step 2: if the channel's last connection attempt failed, replace it.
   */
  private ManagedChannel channelForCall(String method) throws CsiException {
    ManagedChannel ch = channel;
    if (state.get() == State.CLOSED) {
      throw new CallCancelledException(socket, method, "the client is closed");
    }
    ConnectivityState connectivity = ch.getState(false);
    if (connectivity == ConnectivityState.READY) {
      return ch;
    }
    SocketInspector.inspect(socket);
    if (connectivity == ConnectivityState.TRANSIENT_FAILURE || connectivity == ConnectivityState.SHUTDOWN) {
      ch = retire(ch);
    }
    return ch;
  }

  /**
   * Replaces {@code failed} with a fresh channel unless that already happened; returns the channel
   * to use now. The old one is shut down gracefully: calls still waiting on it run out their
   * own deadlines, nothing new starts on it.
   */
  private ManagedChannel retire(ManagedChannel failed) {
    synchronized (lock) {
      if (channel != failed || state.get() == State.CLOSED) {
        return channel;
      }
      ManagedChannel fresh = newChannel();
      channel = fresh;
      failed.shutdown();
      retired.removeIf(ManagedChannel::isTerminated);
      if (!failed.isTerminated()) {
        retired.add(failed);
      }
      log.debug("replaced the channel to {} after a failed connection attempt", socket);
      return fresh;
    }
  }

  @Override
  public void close() {
    if (!state.compareAndSet(State.RUNNING, State.CLOSED)) {
      return;
    }
    List<ManagedChannel> channels;
    synchronized (lock) {
      channels = new ArrayList<>(retired);
      channels.add(channel);
      retired.clear();
    }
    channels.forEach(ManagedChannel::shutdown);
    try {
      if (!awaitTermination(channels, CLOSE_GRACE_MILLIS)) {
        channels.forEach(ManagedChannel::shutdownNow);
        if (!awaitTermination(channels, CLOSE_FORCED_MILLIS)) {
          log.warn("channel to {} did not terminate within {} ms of shutdownNow", socket, CLOSE_FORCED_MILLIS);
        }
      }
    } catch (InterruptedException e) {
      channels.forEach(ManagedChannel::shutdownNow);
      Thread.currentThread().interrupt();
    }
    log.debug("closed client for {}", socket);
  }

  private static boolean awaitTermination(List<ManagedChannel> channels, long millis)
      throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    for (ManagedChannel ch : channels) {
      long left = deadline - System.nanoTime();
      if (!ch.awaitTermination(Math.max(0, left), TimeUnit.NANOSECONDS)) {
        return false;
      }
    }
    return true;
  }

  /** The channel new calls use now; for tests of reuse and replacement. */
  ManagedChannel currentChannel() {
    return channel;
  }

  @Override
  public String toString() {
    return "CsiClient[" + socket + ", " + state.get() + "]";
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
