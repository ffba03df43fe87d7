package dev.csisupervisor.agent.metrics;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.client.VolumeStats;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The last NodeGetVolumeStats answer of each volume, as the volume manager's own calls got it (its health checks and
 * {@code volume stats}): what {@code csi_agent_volume_stats_*} report. Bounded by the volumes published on this node:
 * {@link #current(Set)} forgets every volume no longer published. Thread-safe.
 */
public final class VolumeStatsCache {
  /** A volume of a plugin. */
  public record Key(String plugin, String volume) implements Comparable<Key> {
    public Key {
      requireNonNull(plugin, "plugin");
      requireNonNull(volume, "volume");
    }

    @Override
    public int compareTo(Key o) {
      int c = plugin.compareTo(o.plugin);
      return c != 0 ? c : volume.compareTo(o.volume);
    }
  }

  private final Map<Key, VolumeStats> last = new ConcurrentHashMap<>();

  /** Records the plugin's answer for the volume. */
  public void record(String plugin, String volume, VolumeStats stats) {
    last.put(new Key(plugin, volume), requireNonNull(stats, "stats"));
  }

  /** The answers of the volumes in {@code published}, sorted; the others are forgotten. */
  public Map<Key, VolumeStats> current(Set<Key> published) {
    last.keySet().retainAll(published);
    return new TreeMap<>(last);
  }
}
