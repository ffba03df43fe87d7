package dev.csisupervisor.catalog;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * What a plugin id's controller agent reads from its plugin each check interval, kept in etcd for status, the CLI and
 * creates (README "Cluster volumes"): each registered volume's condition ({@code conditions/<plugin>/<vol>}, absent
 * while normal), what the plugin has that no record names ({@code leaks/<plugin>}) and GetCapacity per topology
 * segment ({@code capacity/<plugin>/<segment>}). The writes are the controller agent's, each conditional on its
 * election key ({@link ControllerElection#lead}) and made only where something changed: with nothing changed a
 * write call makes one read and no write. Part of {@link ClusterVolumes}. Thread-safe.
 */
public interface ControllerReadings {
  /** Returned by a write when the election key is no longer {@code l}'s: nothing was written. */
  int NOT_LEADING = -1;

  /** The conditions of the plugin id's volumes, by volume id (sorted); empty: every volume normal (or unchecked). */
  Map<String, VolumeCondition> conditions(String pluginId);

  /** What the plugin id's controller agent last found the plugin has that no record names, if it found any. */
  Optional<ControllerLeaks> leaks(String pluginId);

  /** The plugin id's last capacity readings, one per topology segment (sorted by segment key). */
  List<CapacityReading> capacity(String pluginId);

  /** The plugin id's node plugins in the catalog (their accessible topology: the segments capacity is read for). */
  List<CatalogEntry> nodePluginsOf(String pluginId);

  /** The snapshot ids recorded under {@code snapshots/<plugin>/} (their values are not read here). */
  Set<String> snapshotRecordIds(String pluginId);

  /**
   * As the controller agent: makes the plugin id's conditions {@code now} (one per volume; every other key of the
   * plugin deleted); a key whose condition says the same ({@link VolumeCondition#sameAs}) is kept as it is, its
   * {@code since} included.
   *
   * @return the keys put or deleted (0: nothing changed, nothing written), or {@link #NOT_LEADING}
   * @throws IllegalArgumentException naming the field: a condition of another plugin id, two of one volume
   */
  int writeConditions(ControllerElection.Leadership l, String pluginId, Collection<VolumeCondition> now);

  /**
   * As the controller agent: the plugin id's leaks as {@code leaks} (an empty one deletes the key); nothing is written
   * if the key says the same ({@link ControllerLeaks#sameAs}).
   *
   * @return the keys put or deleted (0 or 1), or {@link #NOT_LEADING}
   */
  int writeLeaks(ControllerElection.Leadership l, ControllerLeaks leaks);

  /**
   * As the controller agent: the plugin id's capacity readings as {@code now} (one per segment; every other segment's
   * key deleted), each key rewritten only if its answers changed ({@link CapacityReading#sameAs}).
   *
   * @return the keys put or deleted (0: nothing changed), or {@link #NOT_LEADING}
   * @throws IllegalArgumentException naming the field: a reading of another plugin id, two of one segment
   */
  int writeCapacity(ControllerElection.Leadership l, String pluginId, Collection<CapacityReading> now);
}
