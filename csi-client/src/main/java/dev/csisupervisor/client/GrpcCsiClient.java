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
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link CsiClient} over grpc-java with Netty epoll on a unix domain socket. See the interface for
 * the contract. This class validates each call's arguments and names its messages; {@link UnaryCalls} runs the
 * calls (deadlines, cancellation, typed errors). Its {@link PluginChannel} keeps one live channel, replaces it only
 * after a failed connection attempt, and watches for a lost connection; {@link VolumeProtos} and
 * {@link ControllerProtos} build the volume calls' messages. A {@link #withCallerIdentity} view is another instance
 * on the same {@link PluginChannel} whose calls carry the two {@link CallerIdentity} headers.
 */
final class GrpcCsiClient implements CsiClient {
  private static final Logger log = LoggerFactory.getLogger(GrpcCsiClient.class);

  private final Path socket;
  private final CsiClientOptions options;
  private final PluginChannel channels;
  /** Runs the calls; a view's carry its caller identity and have a close of their own. */
  private final UnaryCalls calls;

  private GrpcCsiClient(Path socket, CsiClientOptions options, PluginChannel channels, UnaryCalls calls) {
    this.socket = socket;
    this.options = options;
    this.channels = channels;
    this.calls = calls;
  }


  static CsiClient create(Path socket, CsiClientOptions options) throws SocketPathTooLongException {
    Objects.requireNonNull(socket, "socket");
    Objects.requireNonNull(options, "options");
    Path absolute = SocketInspector.validate(socket);
    SharedEventLoop.group(); // fail here, not on the first call, if epoll is missing
    PluginChannel channels = new PluginChannel(absolute, options.maxInboundMessageBytes());
    return new GrpcCsiClient(absolute, options, channels, new UnaryCalls(absolute, options, channels));
  }

  @Override
  public CsiClient withCallerIdentity(String agentNodeId, long electionRevision) {
    return new GrpcCsiClient(socket, options, channels,
        calls.withIdentity(new CallerIdentity(agentNodeId, electionRevision)));
  }

  @Override
  public Optional<CallerIdentity> callerIdentity() {
    return calls.identity();
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

  private <Q, R, T> CompletableFuture<T> volumeCall(MethodDescriptor<Q, R> method, Q request,
      UnaryCalls.ResponseMapper<R, T> mapper) {
    return calls.call(method, request, mapper, options.volumeCallTimeout());
  }

  private <Q, R, T> CompletableFuture<T> call(MethodDescriptor<Q, R> method, Q request,
      UnaryCalls.ResponseMapper<R, T> mapper) {
    return calls.call(method, request, mapper, options.callTimeout());
  }

  private <Q, R, T> CompletableFuture<T> call(MethodDescriptor<Q, R> method, Q request,
      UnaryCalls.ResponseMapper<R, T> mapper, Duration timeout) {
    return calls.call(method, request, mapper, timeout);
  }

  @Override
  public void close() {
    if (calls.identity().isPresent()) {
      calls.closeView(); // a view: the channel is its root's
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
    return "CsiClient[" + socket + calls.identity().map(id -> ", caller " + id).orElse("") + ", "
        + (channels.isClosed() || calls.viewClosed() ? "CLOSED" : "RUNNING") + "]";
  }
}
