package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A {@link CsiClient} that forwards every call to {@link #delegate()}; decorators (fault injection,
 * call counting, a client that stops dead at a given step for crash tests) override only what they
 * add to, in the manner of Guava's {@code Forwarding*} classes. Thread-safe as the delegate.
 */
public abstract class ForwardingCsiClient implements CsiClient {

  /** The client calls are forwarded to (it may change, e.g. after a reconnect). */
  protected abstract CsiClient delegate();

  @Override public Path socket() { return delegate().socket(); }
  @Override public CompletableFuture<ProbeResult> probeAsync() { return delegate().probeAsync(); }
  @Override public CompletableFuture<CsiPluginInfo> pluginInfoAsync() { return delegate().pluginInfoAsync(); }
  @Override public CompletableFuture<Set<String>> pluginCapabilitiesAsync() { return delegate().pluginCapabilitiesAsync(); }
  @Override public CompletableFuture<Set<String>> controllerCapabilitiesAsync() {
    return delegate().controllerCapabilitiesAsync();
  }
  @Override public CompletableFuture<Set<String>> nodeCapabilitiesAsync() { return delegate().nodeCapabilitiesAsync(); }
  @Override public CompletableFuture<CsiNodeInfo> nodeInfoAsync() { return delegate().nodeInfoAsync(); }
  @Override public CompletableFuture<PluginFingerprint> fingerprintAsync(PluginKind kind) {
    return delegate().fingerprintAsync(kind);
  }

  @Override public CompletableFuture<Void> nodeStageVolumeAsync(NodeStageRequest request) {
    return delegate().nodeStageVolumeAsync(request);
  }
  @Override public CompletableFuture<Void> nodeUnstageVolumeAsync(String volumeId, Path stagingPath) {
    return delegate().nodeUnstageVolumeAsync(volumeId, stagingPath);
  }
  @Override public CompletableFuture<Void> nodePublishVolumeAsync(NodePublishRequest request) {
    return delegate().nodePublishVolumeAsync(request);
  }
  @Override public CompletableFuture<Void> nodeUnpublishVolumeAsync(String volumeId, Path targetPath) {
    return delegate().nodeUnpublishVolumeAsync(volumeId, targetPath);
  }
  @Override public CompletableFuture<VolumeStats> nodeGetVolumeStatsAsync(String volumeId, Path volumePath,
      Optional<Path> stagingPath) {
    return delegate().nodeGetVolumeStatsAsync(volumeId, volumePath, stagingPath);
  }
  @Override public CompletableFuture<Long> nodeExpandVolumeAsync(NodeExpandRequest request) {
    return delegate().nodeExpandVolumeAsync(request);
  }
  @Override public CompletableFuture<CsiVolume> createVolumeAsync(CreateVolumeRequest request) {
    return delegate().createVolumeAsync(request);
  }
  @Override public CompletableFuture<Void> deleteVolumeAsync(String volumeId, Secrets secrets) {
    return delegate().deleteVolumeAsync(volumeId, secrets);
  }
  @Override public CompletableFuture<Map<String, String>> controllerPublishVolumeAsync(ControllerPublishRequest request) {
    return delegate().controllerPublishVolumeAsync(request);
  }
  @Override public CompletableFuture<Void> controllerUnpublishVolumeAsync(String volumeId, String nodeId,
      Secrets secrets) {
    return delegate().controllerUnpublishVolumeAsync(volumeId, nodeId, secrets);
  }
  @Override public CompletableFuture<ControllerExpandResult> controllerExpandVolumeAsync(String volumeId,
      CapacityRange capacityRange, Optional<VolumeCapability> capability, Secrets secrets) {
    return delegate().controllerExpandVolumeAsync(volumeId, capacityRange, capability, secrets);
  }
  @Override public CompletableFuture<CsiSnapshot> createSnapshotAsync(CreateSnapshotRequest request) {
    return delegate().createSnapshotAsync(request);
  }
  @Override public CompletableFuture<Void> deleteSnapshotAsync(String snapshotId, Secrets secrets) {
    return delegate().deleteSnapshotAsync(snapshotId, secrets);
  }
  @Override public CompletableFuture<SnapshotPage> listSnapshotsAsync(ListSnapshotsRequest request) {
    return delegate().listSnapshotsAsync(request);
  }
  @Override public CompletableFuture<VolumePage> listVolumesAsync(int maxEntries, Optional<String> startingToken) {
    return delegate().listVolumesAsync(maxEntries, startingToken);
  }
  @Override public CompletableFuture<VolumeEntry> controllerGetVolumeAsync(String volumeId) {
    return delegate().controllerGetVolumeAsync(volumeId);
  }
  @Override public CompletableFuture<ValidationResult> validateVolumeCapabilitiesAsync(
      ValidateCapabilitiesRequest request) {
    return delegate().validateVolumeCapabilitiesAsync(request);
  }
  @Override public CompletableFuture<CsiCapacity> getCapacityAsync(CapacityRequest request) {
    return delegate().getCapacityAsync(request);
  }
  @Override public CompletableFuture<Void> controllerModifyVolumeAsync(String volumeId,
      Map<String, String> mutableParameters, Secrets secrets) {
    return delegate().controllerModifyVolumeAsync(volumeId, mutableParameters, secrets);
  }
  /** The delegate's view: a decorator whose behaviour the view must keep overrides this. */
  @Override public CsiClient withCallerIdentity(String agentNodeId, long electionRevision) {
    return delegate().withCallerIdentity(agentNodeId, electionRevision);
  }
  @Override public Optional<CallerIdentity> callerIdentity() { return delegate().callerIdentity(); }
  @Override public void onConnectionLost(Runnable listener) { delegate().onConnectionLost(listener); }
  @Override public void close() { delegate().close(); }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + delegate() + "]";
  }
}
