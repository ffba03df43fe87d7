package dev.csisupervisor.mockplugin;

import java.time.Duration;
import java.util.Set;

/**
 * What the {@link InMemoryDriver} does like a cloud, as {@link MockCsiPlugin.Builder} set it, with or without a
 * shared cloud: how long a snapshot's cut takes and when it is ready, whether snapshots depend on their volumes, the
 * mutable parameters it accepts, its pools. Set before the plugin serves; thread-safe (volatile).
 */
final class DriverSettings {
  private volatile Duration snapshotCut = Duration.ZERO;
  private volatile Duration snapshotReady = Duration.ZERO;
  private volatile boolean dependentSnapshots;
  private volatile Set<String> mutableNames = Set.of();
  private volatile Pools pools = Pools.NONE;

  /** How long cutting a snapshot takes ({@code --snapshot-ms}), and how long after the cut it is ready. */
  void snapshotTimes(Duration cut, Duration ready) {
    this.snapshotCut = cut;
    this.snapshotReady = ready;
  }

  Duration snapshotCut() {
    return snapshotCut;
  }

  Duration snapshotReady() {
    return snapshotReady;
  }

  void dependentSnapshots(boolean on) {
    this.dependentSnapshots = on;
  }

  /** ZFS-like: a snapshot with volumes restored from it, or a volume with snapshots, is not deleted. */
  boolean dependentSnapshots() {
    return dependentSnapshots;
  }

  void mutableNames(Set<String> names) {
    this.mutableNames = Set.copyOf(names);
  }

  /** The mutable parameters it accepts ({@code --mutable-parameters}); empty: none. */
  Set<String> mutableNames() {
    return mutableNames;
  }

  void pools(Pools p) {
    this.pools = p;
  }

  Pools pools() {
    return pools;
  }

}
