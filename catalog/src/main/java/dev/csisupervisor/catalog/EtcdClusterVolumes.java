package dev.csisupervisor.catalog;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * {@link ClusterVolumes} on the project's etcd client, one collaborator per seam: a volume's own key
 * ({@link EtcdVolumeRegistrations}), claims and their guards ({@link EtcdClaims}, the node side), the operator's
 * detach of a node ({@link EtcdNodeDetach}), the election and its lease ({@link EtcdElection}), the controller agent's
 * attachments and fences ({@link EtcdAttachments}), create and delete requests ({@link EtcdRequests},
 * {@link EtcdVolumeOperations}), its readings ({@link EtcdControllerReadings}), and the snapshot a controller round
 * reads, from etcd or the watch-fed mirror ({@link VolumesReads}). Here: building them on one client, and the
 * delegation.
 */
final class EtcdClusterVolumes implements ClusterVolumes {
  private final EtcdClient client;
  private final EtcdOps ops;
  private final EtcdVolumeRegistrations registrations;
  private final EtcdClaims claimStore;
  private final EtcdNodeDetach detach;
  private final EtcdElection election;
  private final EtcdAttachments attachments;
  private final EtcdRequests requests;
  private final EtcdVolumeOperations operations;
  /** The watch-fed mirror while {@link #watchChanges} is open. */
  private final VolumesReads reads;
  /** The controller agent's readings: conditions, leaks, capacity. */
  private final EtcdControllerReadings readings;

  EtcdClusterVolumes(ClusterVolumes.Builder b) {
    this.client = b.newClient();
    this.ops = new EtcdOps(client, b.keys);
    this.claimStore = new EtcdClaims(ops, b.clock);
    this.reads = new VolumesReads(ops, claimStore);
    this.registrations = new EtcdVolumeRegistrations(ops, claimStore);
    this.detach = new EtcdNodeDetach(ops, reads);
    this.attachments = new EtcdAttachments(ops, reads, b.nodeId, b.clock);
    this.election = new EtcdElection(ops, reads, attachments, b.nodeId, b.clock, b.leaseTtl.toSeconds());
    this.operations = new EtcdVolumeOperations(ops, attachments);
    this.requests = new EtcdRequests(ops, claimStore, attachments, operations);
    this.readings = new EtcdControllerReadings(ops, attachments);
  }

  // ---- volumes and the operator's detach (EtcdVolumeRegistrations, EtcdNodeDetach) ----

  @Override
  public boolean register(ClusterVolume volume) throws VolumeStateException {
    return registrations.register(volume);
  }

  @Override
  public boolean deregister(String pluginId, String volumeId) throws VolumeStateException {
    return registrations.deregister(pluginId, volumeId);
  }

  @Override
  public Optional<ClusterVolume> volume(String pluginId, String volumeId) {
    return ops.volume(pluginId, volumeId);
  }

  @Override
  public void orderDetach(DetachOrder order) {
    detach.orderDetach(order);
  }

  @Override
  public boolean withdrawDetach(String nodeId) {
    return detach.withdrawDetach(nodeId);
  }

  @Override
  public List<ClusterClaim> forceDetach(String nodeId, Optional<String> pluginId, Optional<String> volumeId) {
    return detach.forceDetach(nodeId, pluginId, volumeId);
  }

  // ---- the election (EtcdElection) ----

  @Override
  public Optional<Leadership> lead(String pluginId) {
    return election.lead(pluginId);
  }

  @Override
  public void resign(Leadership l) {
    election.resign(l);
  }

  @Override
  public Duration leadershipLeft(Leadership l) {
    return election.left(l);
  }

  @Override
  public void onLeaseLost(Runnable lost) {
    election.onLeaseLost(lost);
  }

  // ---- attachments, the fence and the clean stop (EtcdAttachments) ----

  @Override
  public Optional<ClusterAttachment> attachment(String pluginId, String volumeId, String nodeId) {
    return attachments.attachment(pluginId, volumeId, nodeId);
  }

  @Override
  public boolean controllerPublishes(String pluginId) {
    return attachments.controllerPublishes(pluginId);
  }

  @Override
  public Optional<ClusterAttachment> intendAttach(Leadership l, ClusterAttachment attaching) {
    return attachments.intend(l, attaching);
  }

  @Override
  public Optional<ClusterAttachment> updateAttachment(Leadership l, ClusterAttachment from, ClusterAttachment to) {
    return attachments.update(l, from, to);
  }

  @Override
  public Optional<ClusterAttachment> markDetaching(Leadership l, ClusterAttachment a) {
    return attachments.markDetaching(l, a);
  }

  @Override
  public boolean deleteAttachment(Leadership l, ClusterAttachment a) {
    return attachments.delete(l, a);
  }

  @Override
  public Optional<ClusterAttachment> beginFence(Leadership l, ClusterAttachment a, boolean ordered) {
    return attachments.beginFence(l, a, ordered);
  }

  @Override
  public boolean completeFence(Leadership l, String pluginId, String volumeId, String node,
      Optional<ClusterAttachment> a, long revision, boolean ordered) {
    return attachments.completeFence(l, pluginId, volumeId, node, a, revision, ordered);
  }

  @Override
  public void rememberCapabilities(Leadership l, Set<String> controllerCapabilities) {
    attachments.rememberCapabilities(l, controllerCapabilities);
  }

  @Override
  public void markStopped() {
    attachments.markStopped();
  }

  @Override
  public void clearStopped() {
    attachments.clearStopped();
  }

  // ---- claims (EtcdClaims) ----

  @Override
  public ClusterClaim claim(ClaimRequest request) throws ClaimRefusedException {
    return claimStore.claim(request);
  }

  @Override
  public boolean release(String pluginId, String volumeId, String nodeId, String allocId) {
    return claimStore.release(pluginId, volumeId, nodeId, allocId);
  }

  @Override
  public boolean release(ClusterClaim claim) {
    return claimStore.release(claim);
  }

  @Override
  public List<ClusterClaim> claims(String pluginId, String volumeId) {
    return claimStore.claims(pluginId, volumeId);
  }

  @Override
  public List<ClusterClaim> claimsOfNode(String nodeId) {
    return claimStore.claimsOfNode(nodeId);
  }

  // ---- create and delete requests (EtcdRequests) ----

  @Override
  public List<CatalogEntry> controllersOf(String pluginId) {
    return requests.controllersOf(pluginId);
  }

  @Override
  public ClusterVolumeRequest requestCreate(ClusterVolumeRequest request) throws VolumeStateException {
    return requests.requestCreate(request);
  }

  @Override
  public Optional<ClusterVolumeRequest> requestDelete(ClusterVolumeRequest request) throws VolumeStateException {
    return requests.requestDelete(request);
  }

  @Override
  public Optional<ClusterVolumeRequest> request(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    return requests.request(kind, pluginId, name);
  }

  @Override
  public boolean withdraw(ClusterVolumeRequest.Kind kind, String pluginId, String name) {
    return requests.withdraw(kind, pluginId, name);
  }

  @Override
  public Optional<ClusterVolumeRequest> updateRequest(Leadership l, ClusterVolumeRequest from, ClusterVolumeRequest to) {
    return requests.updateRequest(l, from, to);
  }

  @Override
  public boolean completeCreate(Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    return requests.completeCreate(l, request, volume);
  }

  @Override
  public boolean completeDelete(Leadership l, ClusterVolumeRequest request) {
    return requests.completeDelete(l, request);
  }

  @Override
  public VolumesSnapshot read() {
    return reads.read();
  }

  @Override
  public AutoCloseable watchChanges(Runnable changed) {
    return reads.watchChanges(changed);
  }

  /** Whether the watch-fed mirror is open and in sync. */
  boolean mirrorSynced() {
    return reads.mirrorSynced();
  }

  /** Unary etcd requests made by this client (not its streams): what a controller round costs. */
  @Override
  public long etcdRequests() {
    return client.unaryCalls();
  }

  // ---- the controller agent's readings (EtcdControllerReadings) ----

  @Override
  public java.util.Map<String, VolumeCondition> conditions(String pluginId) {
    return readings.conditions(pluginId);
  }

  @Override
  public Optional<ControllerLeaks> leaks(String pluginId) {
    return readings.leaks(pluginId);
  }

  @Override
  public List<CapacityReading> capacity(String pluginId) {
    return readings.capacity(pluginId);
  }

  @Override
  public List<CatalogEntry> nodePluginsOf(String pluginId) {
    return readings.nodePluginsOf(pluginId);
  }

  @Override
  public Set<String> snapshotRecordIds(String pluginId) {
    return readings.snapshotRecordIds(pluginId);
  }

  @Override
  public int writeConditions(Leadership l, String pluginId, java.util.Collection<VolumeCondition> now) {
    return readings.writeConditions(l, pluginId, now);
  }

  @Override
  public int writeLeaks(Leadership l, ControllerLeaks leaks) {
    return readings.writeLeaks(l, leaks);
  }

  @Override
  public int writeCapacity(Leadership l, String pluginId, java.util.Collection<CapacityReading> now) {
    return readings.writeCapacity(l, pluginId, now);
  }

  @Override
  public void close() {
    election.close();
    client.close();
  }

  @Override
  public ClusterVolumeRequest ask(ClusterVolumeRequest request) throws VolumeStateException {
    return operations.ask(request);
  }

  @Override
  public Optional<ClusterVolumeRequest> requestSnapshotDelete(ClusterVolumeRequest request)
      throws VolumeStateException {
    return operations.requestSnapshotDelete(request);
  }

  @Override
  public Optional<ClusterVolumeSnapshot> snapshot(String pluginId, String snapshotId) {
    return operations.snapshot(pluginId, snapshotId);
  }

  @Override
  public Optional<ClusterVolumeRequest> recordSnapshot(Leadership l, ClusterVolumeRequest request,
      ClusterVolumeSnapshot snapshot, ClusterVolumeRequest to) {
    return operations.recordSnapshot(l, request, snapshot, to);
  }

  @Override
  public boolean completeSnapshotDelete(Leadership l, ClusterVolumeRequest request) {
    return operations.completeSnapshotDelete(l, request);
  }

  @Override
  public boolean completeModify(Leadership l, ClusterVolumeRequest request) {
    return operations.volumeAt(request.pluginId(), request.name())
        .map(v -> operations.completeModify(l, request, v.value().modified(request.spec().mutableParameters()),
            v.revision()))
        .orElse(false);
  }

  @Override
  public boolean completeRegister(Leadership l, ClusterVolumeRequest request, ClusterVolume volume)
      throws VolumeStateException {
    return operations.completeRegister(l, request, volume);
  }

  @Override
  public boolean completeCancel(Leadership l, ClusterVolumeRequest request, Optional<String> madeSnapshot) {
    return operations.completeCancel(l, request, madeSnapshot);
  }
}
