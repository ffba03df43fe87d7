package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A client for one CSI plugin, reached over its unix domain socket.
 *
 * <p><b>Connection.</b> One gRPC channel (Netty epoll, shared I/O threads for all clients) is
 * created with the client and reused for every call. The client connects on the first call, not
 * on {@link #create}. When a connection attempt fails (nothing listening yet, stale socket, not a
 * gRPC server) the call fails at once and that channel is replaced, so the next call connects
 * right away instead of waiting out gRPC's reconnect backoff: retrying is the caller's decision.
 * While not connected, each call first looks at the socket path (stat, no connection) so that a
 * missing path, a regular file or a permission problem is reported precisely.
 *
 * <p><b>Calls.</b> Every call has a deadline ({@link CsiClientOptions#callTimeout()}), does not
 * wait for the plugin to become reachable, and bounds the response size
 * ({@link CsiClientOptions#maxInboundMessageBytes()}). Failures are {@link CsiException}
 * subtypes naming the socket; no gRPC type is visible through this interface.
 *
 * <p><b>Blocking and async.</b> The {@code ...Async} methods never block the caller (while not
 * connected they stat the socket path on the calling thread, nothing more): the returned
 * future completes on one of the client's shared I/O threads ({@code csi-client-io}), where stages
 * attached with the non-async {@code then...} methods also run: never block there, attach any
 * real work with an explicit executor ({@code thenApplyAsync(f, executor)}). A failed
 * future holds the {@link CsiException} itself (see {@link CsiException#find} to unwrap the
 * {@code CompletionException} of dependent stages). Cancelling a returned future cancels the call.
 * The blocking methods wait for the same future; an interrupt cancels the call, sets the thread's
 * interrupt flag again and throws {@link CallCancelledException}.
 *
 * <p><b>Threads.</b> Implementations are thread-safe; calls may run concurrently from any thread.
 * {@link #close()} is idempotent; calls after it fail with {@link CallCancelledException}.
 */
public interface CsiClient extends AutoCloseable {

  /**
   * A client for the plugin socket at {@code socket} with {@link CsiClientOptions#defaults()}.
   *
   * @param socket the plugin's socket; a relative path is made absolute against the working directory
   * @throws SocketPathTooLongException if the absolute path is over 107 bytes (nothing is connected)
   * @throws IllegalArgumentException if {@code socket} is empty
   * @throws IllegalStateException if Netty's epoll transport is not available (not Linux)
   */
  static CsiClient create(Path socket) throws SocketPathTooLongException {
    return create(socket, CsiClientOptions.defaults());
  }

  /**
   * A client for the plugin socket at {@code socket}.
   *
   * @see #create(Path)
   */
  static CsiClient create(Path socket, CsiClientOptions options) throws SocketPathTooLongException {
    return GrpcCsiClient.create(socket, options);
  }

  /** The plugin's socket path, absolute. */
  Path socket();

  /** {@code Identity.Probe}: whether the plugin is ready (an absent {@code ready} field means ready). */
  CompletableFuture<ProbeResult> probeAsync();

  /** {@code Identity.GetPluginInfo}. An empty name fails with {@link InvalidResponseException}. */
  CompletableFuture<CsiPluginInfo> pluginInfoAsync();

  /** {@code Identity.GetPluginCapabilities}, named as {@link CsiCapabilities} describes. */
  CompletableFuture<Set<String>> pluginCapabilitiesAsync();

  /** {@code Controller.ControllerGetCapabilities}, named as {@link CsiCapabilities} describes. */
  CompletableFuture<Set<String>> controllerCapabilitiesAsync();

  /** {@code Node.NodeGetCapabilities}, named as {@link CsiCapabilities} describes. */
  CompletableFuture<Set<String>> nodeCapabilitiesAsync();

  /**
   * {@code Node.NodeGetInfo}. An empty node id or a negative max volumes fails with
   * {@link InvalidResponseException}.
   */
  CompletableFuture<CsiNodeInfo> nodeInfoAsync();

  /**
   * Everything a plugin of {@code kind} reports, gathered into one {@link PluginFingerprint}, asked
   * by capability: plugin info and plugin capabilities always; controller capabilities only if
   * {@code kind} has a controller half <em>and</em> the plugin advertises
   * {@link CsiCapabilities#CONTROLLER_SERVICE} (so a controller-configured plugin without it
   * yields a fingerprint whose {@link PluginFingerprint#servesController()} is false, for the
   * caller to refuse); node capabilities and node info for a kind with a node half. For a
   * {@link PluginKind#MONOLITH} a Node service answering {@code UNIMPLEMENTED} leaves the node
   * fields empty ({@link PluginFingerprint#servesNode()} false) instead of failing. The calls run
   * concurrently (the controller call once the plugin capabilities are known), each with the
   * fingerprint deadline ({@link CsiClientOptions#fingerprintTimeout()}). If any fails, the
   * future fails with the first failure in the order info, plugin capabilities, controller
   * capabilities, node capabilities, node info, once all have finished.
   */
  default CompletableFuture<PluginFingerprint> fingerprintAsync(PluginKind kind) {
    Objects.requireNonNull(kind, "kind");
    return Fingerprints.gather(kind, this::pluginInfoAsync, this::pluginCapabilitiesAsync,
        this::controllerCapabilitiesAsync, this::nodeCapabilitiesAsync, this::nodeInfoAsync);
  }

  /** Blocking {@link #probeAsync()}. */
  default ProbeResult probe() throws CsiException {
    return Fingerprints.await(this, probeAsync(), CsiMethods.PROBE);
  }

  /** Blocking {@link #pluginInfoAsync()}. */
  default CsiPluginInfo pluginInfo() throws CsiException {
    return Fingerprints.await(this, pluginInfoAsync(), CsiMethods.GET_PLUGIN_INFO);
  }

  /** Blocking {@link #pluginCapabilitiesAsync()}. */
  default Set<String> pluginCapabilities() throws CsiException {
    return Fingerprints.await(this, pluginCapabilitiesAsync(), CsiMethods.GET_PLUGIN_CAPABILITIES);
  }

  /** Blocking {@link #controllerCapabilitiesAsync()}. */
  default Set<String> controllerCapabilities() throws CsiException {
    return Fingerprints.await(this, controllerCapabilitiesAsync(), CsiMethods.CONTROLLER_GET_CAPABILITIES);
  }

  /** Blocking {@link #nodeCapabilitiesAsync()}. */
  default Set<String> nodeCapabilities() throws CsiException {
    return Fingerprints.await(this, nodeCapabilitiesAsync(), CsiMethods.NODE_GET_CAPABILITIES);
  }

  /** Blocking {@link #nodeInfoAsync()}. */
  default CsiNodeInfo nodeInfo() throws CsiException {
    return Fingerprints.await(this, nodeInfoAsync(), CsiMethods.NODE_GET_INFO);
  }

  /** Blocking {@link #fingerprintAsync(PluginKind)}. */
  default PluginFingerprint fingerprint(PluginKind kind) throws CsiException {
    return Fingerprints.await(this, fingerprintAsync(kind), "fingerprint(" + kind + ")");
  }

  // ---- volumes: each call has the volume deadline (CsiClientOptions#volumeCallTimeout) ----
  // A plugin's error status is a CsiStatusException with the code and message as the plugin sent them.

  /** {@code Node.NodeStageVolume}. */
  CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest request);

  /** {@code Node.NodeUnstageVolume}: needs no secrets. */
  CompletableFuture<Void> nodeUnstageVolumeAsync(String volumeId, Path stagingPath);

  /** {@code Node.NodePublishVolume}. */
  CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest request);

  /** {@code Node.NodeUnpublishVolume}: needs no secrets. */
  CompletableFuture<Void> nodeUnpublishVolumeAsync(String volumeId, Path targetPath);

  /**
   * {@code Node.NodeGetVolumeStats} of the volume published (or staged) at {@code volumePath}.
   *
   * @param stagingPath where it is staged, if it is
   */
  CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String volumeId, Path volumePath, Optional<Path> stagingPath);

  /**
   * {@code Node.NodeExpandVolume}: the new size in bytes, 0 if the plugin did not say. A negative
   * size is an {@link InvalidResponseException}.
   */
  CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest request);

  /**
   * {@code Controller.CreateVolume}, with its content source and mutable parameters if the request has them. A blank
   * volume id in the answer is an {@link InvalidResponseException}; the answer's {@code content_source} is
   * {@link CsiVolume#contentSource()}.
   */
  CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest request);

  /** {@code Controller.DeleteVolume}. */
  CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets);

  /** {@code Controller.ControllerPublishVolume}: the publish context to hand to stage and publish. */
  CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(ControllerPublishRequest request);

  /** {@code Controller.ControllerUnpublishVolume}. */
  CompletableFuture<Void> controllerUnpublishVolumeAsync(String volumeId, String nodeId, Secrets secrets);

  /** {@code Controller.ControllerExpandVolume}. A negative size is an {@link InvalidResponseException}. */
  CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String volumeId, CapacityRange capacityRange,
      Optional<VolumeCapability> capability, Secrets secrets);

  /**
   * {@code Controller.CreateSnapshot}. Sending the same name again answers the same snapshot with its readiness now
   * (CSI: the way to learn when a snapshot becomes {@link CsiSnapshot#readyToUse()}); the same name with another
   * source volume is the plugin's {@code ALREADY_EXISTS}. A blank snapshot or source id in the answer is an
   * {@link InvalidResponseException}.
   */
  CompletableFuture<CsiSnapshot> createSnapshotAsync(CreateSnapshotRequest request);

  /** {@code Controller.DeleteSnapshot}: an unknown id is success (CSI). */
  CompletableFuture<Void> deleteSnapshotAsync(String snapshotId, Secrets secrets);

  /** {@code Controller.ListSnapshots}: one page. A token the plugin does not know is its {@code ABORTED}. */
  CompletableFuture<SnapshotPage> listSnapshotsAsync(ListSnapshotsRequest request);

  /**
   * {@code Controller.ListVolumes}: one page of at most {@code maxEntries} (0: the plugin's choice) from
   * {@code startingToken} (empty: the first). A token the plugin does not know is its {@code ABORTED}: start over.
   *
   * @throws IllegalArgumentException a negative {@code maxEntries}, a blank token
   */
  CompletableFuture<VolumePage> listVolumesAsync(int maxEntries, Optional<String> startingToken);

  /** {@code Controller.ControllerGetVolume}: the volume, the nodes it is published to, its condition. */
  CompletableFuture<VolumeEntry> controllerGetVolumeAsync(String volumeId);

  /**
   * {@code Controller.ValidateVolumeCapabilities}: confirmed, or not with the plugin's message. An unknown volume is
   * the plugin's {@code NOT_FOUND}; a confirmed capability this client cannot read is an
   * {@link InvalidResponseException}.
   */
  CompletableFuture<ValidationResult> validateVolumeCapabilitiesAsync(ValidateCapabilitiesRequest request);

  /** {@code Controller.GetCapacity}. A negative size is an {@link InvalidResponseException}. */
  CompletableFuture<CsiCapacity> getCapacityAsync(CapacityRequest request);

  /**
   * {@code Controller.ControllerModifyVolume}: sets these mutable parameters of the volume (CSI's
   * {@code mutable_parameters}; keys the plugin does not accept are its {@code INVALID_ARGUMENT}).
   *
   * @param mutableParameters at least one; no blank key
   * @throws IllegalArgumentException naming the field: a blank volume id, no parameters, a blank key
   */
  CompletableFuture<Void> controllerModifyVolumeAsync(String volumeId, Map<String, String> mutableParameters,
      Secrets secrets);

  /**
   * A view of this client whose every call carries {@code agentNodeId} and {@code electionRevision} as gRPC metadata
   * ({@link CallerIdentity}: headers {@value CallerIdentity#AGENT_HEADER} and {@value CallerIdentity#ELECTION_HEADER}),
   * for a controller agent to say on each Controller call which election it acts under. This client is unaffected:
   * its calls carry nothing.
   *
   * <p>The view shares this client's channel, so it is cheap: take one per election term, or one per call
   * ({@code client.withCallerIdentity(id, rev).controllerPublishVolumeAsync(r)}). It carries the identity on every
   * call it makes (Identity and Node calls too). Its {@link #close()} stops only the view (its later calls fail with
   * {@link CallCancelledException}; calls in flight run on), never the channel: closing this client closes the view's
   * calls too. {@link #withCallerIdentity} of a view replaces the identity. The default implementation (a client
   * that is no gRPC client, such as a test's fake) refuses with {@link UnsupportedOperationException}, after checking
   * the arguments.
   *
   * @param agentNodeId the calling agent's node id, not blank
   * @param electionRevision the create revision of the election key the agent holds, at least 1
   * @throws IllegalArgumentException naming the field: a blank node id, a revision below 1
   */
  default CsiClient withCallerIdentity(String agentNodeId, long electionRevision) {
    CallerIdentity identity = new CallerIdentity(agentNodeId, electionRevision);
    throw new UnsupportedOperationException(getClass().getName() + " cannot carry a caller identity (" + identity
        + ")");
  }

  /** The identity this client's calls carry ({@link #withCallerIdentity}); empty for a client made by {@link #create}. */
  default Optional<CallerIdentity> callerIdentity() {
    return Optional.empty();
  }

  /**
   * Calls {@code listener} each time an established connection to the plugin is lost: the plugin's end closed
   * it (the process died, or the server shut the connection), never because this client closed. Lets a
   * supervisor see a dead plugin at once instead of at its next probe. The listener runs on a gRPC I/O thread:
   * it must only hand the news on, never block. Costs nothing on the wire.
   */
  void onConnectionLost(Runnable listener);

  /**
   * Closes the channel: lets calls in flight finish for up to 200 ms, then cancels them (they fail
   * with {@link CallCancelledException}). Idempotent; blocks at most about a second.
   */
  @Override
  void close();
}
