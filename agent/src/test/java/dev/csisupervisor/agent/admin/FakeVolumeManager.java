package dev.csisupervisor.agent.admin;

import dev.csisupervisor.client.AccessMode;
import dev.csisupervisor.client.CapacityRange;
import dev.csisupervisor.client.CsiVolume;
import dev.csisupervisor.client.Secrets;
import dev.csisupervisor.client.TopologyRequirement;
import dev.csisupervisor.client.VolumeCapability;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.volumes.MountedVolume;
import dev.csisupervisor.volumes.OrphanMount;
import dev.csisupervisor.volumes.UnmountRequest;
import dev.csisupervisor.volumes.VolumeClaim;
import dev.csisupervisor.volumes.VolumeListener;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.ControllerState;
import dev.csisupervisor.volumes.VolumeRecord.StageState;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import dev.csisupervisor.volumes.VolumeUsage;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;

/**
 * A volume manager that answers what the test set and records what it was asked (unmounts, releases, orphan
 * collections); what the admin tests do not use throws. Thread-safe: the test sets it up, gRPC threads call it.
 */
final class FakeVolumeManager implements VolumeManager {
  private static final VolumeUsage RWO = new VolumeUsage(VolumeCapability.AccessType.MOUNT,
      AccessMode.SINGLE_NODE_WRITER, false);

  volatile List<VolumeRecord> records = List.of();
  volatile Map<String, String> waiting = Map.of();
  volatile CompletableFuture<Void> unmount = new CompletableFuture<>();
  volatile CompletableFuture<List<String>> release = new CompletableFuture<>();
  volatile List<OrphanMount> orphans = List.of();
  final List<UnmountRequest> unmounts = new CopyOnWriteArrayList<>();
  final List<VolumeClaim> claims = new CopyOnWriteArrayList<>();
  final List<String> releases = new CopyOnWriteArrayList<>();
  final List<Boolean> orphanRemoves = new CopyOnWriteArrayList<>();
  /** What create answers; the topology each create was asked with. */
  volatile CsiVolume created = new CsiVolume("vol-1", 1L << 30, Map.of(), List.of());
  final List<Optional<TopologyRequirement>> createTopologies = new CopyOnWriteArrayList<>();

  @Override
  public CompletableFuture<Void> unmount(UnmountRequest request) {
    unmounts.add(request);
    return unmount;
  }

  @Override
  public CompletableFuture<List<String>> releaseAlloc(String allocId, boolean force) {
    if (allocId.contains("/")) {
      throw new IllegalArgumentException("allocId must not contain '/'");
    }
    releases.add(allocId + (force ? " forced" : ""));
    return release;
  }

  @Override
  public CompletableFuture<List<OrphanMount>> collectOrphans(boolean remove) {
    orphanRemoves.add(remove);
    return CompletableFuture.completedFuture(orphans);
  }

  @Override
  public List<VolumeRecord> list() {
    return records;
  }

  @Override
  public List<VolumeRecord> pending() {
    return records.stream().filter(VolumeRecord::hasWork).toList();
  }

  @Override
  public Map<String, String> waitingFor() {
    return waiting;
  }

  @Override
  public Map<String, String> abnormal() {
    return Map.of();
  }

  @Override
  public CompletableFuture<MountedVolume> mount(VolumeClaim claim) {
    claims.add(claim);
    return CompletableFuture.completedFuture(new MountedVolume(claim.pluginId(), claim.volumeId(), claim.allocId(),
        claim.usage(), Path.of("/csi/node/disk/per-alloc", claim.allocId(), "t"), Optional.empty()));
  }

  @Override
  public CompletableFuture<List<String>> retainAllocs(Set<String> live) {
    throw new UnsupportedOperationException();
  }

  @Override
  public Optional<VolumeRecord> find(String pluginId, String volumeId) {
    return records.stream().filter(r -> r.pluginId().equals(pluginId) && r.volumeId().equals(volumeId)).findFirst();
  }

  @Override
  public CompletableFuture<VolumeStats> stats(String pluginId, String volumeId, Optional<String> allocId) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletableFuture<Long> expand(String pluginId, String volumeId, CapacityRange range, Secrets secrets) {
    throw new UnsupportedOperationException();
  }

  @Override
  public CompletableFuture<CsiVolume> create(String pluginId, String name, Optional<CapacityRange> capacity,
      List<VolumeCapability> capabilities, Map<String, String> parameters, Secrets secrets,
      Optional<TopologyRequirement> topology) {
    createTopologies.add(topology);
    return CompletableFuture.completedFuture(created);
  }

  @Override
  public CompletableFuture<Void> delete(String pluginId, String volumeId, Secrets secrets) {
    throw new UnsupportedOperationException();
  }

  @Override
  public List<String> recovered() {
    return List.of();
  }

  @Override
  public CommitStats commitStats() {
    return new CommitStats(0, 0);
  }

  @Override
  public AutoCloseable addListener(VolumeListener listener, Executor executor) {
    return () -> {};
  }

  @Override
  public void close() {}

  /** A volume of plugin {@code disk} not on this node, owed a node expansion to {@code bytes}. */
  static VolumeRecord owed(String volume, long bytes) {
    return new VolumeRecord("disk", volume, Path.of("/csi/node/disk"), ControllerState.NONE, "", Map.of(),
        new TreeMap<>(Comparator.comparing(VolumeUsage::dirName)), Map.of(), Optional.empty(), false,
        VolumeRecord.Layout.PER_VOLUME, new TreeMap<>(), Optional.of(CapacityRange.atLeast(bytes)));
  }

  /** A volume of plugin {@code disk} with one usage, staged as {@code stage}, alloc {@code a} in {@code phase}. */
  static VolumeRecord record(String volume, AllocPhase phase, StageState stage, boolean forced) {
    TreeMap<String, AllocPhase> allocs = new TreeMap<>(Map.of("a", phase));
    VolumeCapability ext4 = VolumeCapability.mount("ext4", List.of(), AccessMode.SINGLE_NODE_WRITER);
    String staging = VolumeRecord.directoryName(volume);
    UsageRecord u = new UsageRecord(RWO, ext4, stage == StageState.NOT_STAGED ? "" : staging, allocs, false);
    TreeMap<VolumeUsage, UsageRecord> usages = new TreeMap<>(Comparator.comparing(VolumeUsage::dirName));
    usages.put(RWO, u);
    TreeMap<String, VolumeRecord.Staging> stagings = new TreeMap<>();
    if (stage != StageState.NOT_STAGED) {
      stagings.put(staging, new VolumeRecord.Staging(stage, true, "MOUNT|fs=ext4|group=|flags="));
    }
    return new VolumeRecord("disk", volume, Path.of("/csi/node/disk"), ControllerState.NONE, "", Map.of(), usages,
        Map.of(), Optional.empty(), forced, VolumeRecord.Layout.PER_VOLUME, stagings);
  }
}
