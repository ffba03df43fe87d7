package dev.csisupervisor.agent;

import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.metrics.ObservedCsiClient;
import dev.csisupervisor.agent.metrics.PendingSince;
import dev.csisupervisor.agent.metrics.VolumeStatsCache;
import dev.csisupervisor.client.CsiClient;
import dev.csisupervisor.client.SocketPathTooLongException;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.VolumeEvent;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Set;
import java.util.SortedMap;
import java.util.stream.Collectors;

/**
 * The volume manager's metrics by plugin: its clients counted per plugin id ({@link ObservedCsiClient}), the last
 * volume stats of each published volume, and since when each pending volume waits (also what the operator page
 * shows). Thread-safe.
 */
final class VolumeMetrics {
  private final AgentMetrics metrics;
  private final PluginRegistry registry;
  private final VolumeStatsCache stats = new VolumeStatsCache();
  private final PendingSince pending;

  VolumeMetrics(AgentMetrics metrics, PluginRegistry registry, Clock clock) {
    this.metrics = metrics;
    this.registry = registry;
    this.pending = new PendingSince(clock);
  }

  /** The volume manager's client factory: the default client, observed, named by the plugin registered there. */
  CsiClient client(Path socket) {
    CsiClient c;
    try {
      c = CsiClient.create(socket);
    } catch (SocketPathTooLongException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    return new ObservedCsiClient(c, pluginOf(socket), metrics, stats, System::nanoTime);
  }

  /** The plugin id registered with the socket; else the socket's directory (the layout's {@code <type>/<id>/}). */
  private String pluginOf(Path socket) {
    for (PluginType t : PluginType.values()) {
      for (PluginInfo p : registry.listAll(t)) {
        if (p.socketPath().equals(socket)) {
          return p.name();
        }
      }
    }
    Path dir = socket.getParent();
    return dir == null || dir.getFileName() == null ? socket.toString() : dir.getFileName().toString();
  }

  /** Reports the manager's volume stats and pending age at each scrape. */
  void watch(VolumeManager volumes) {
    metrics.watchVolumeStats(() -> stats(volumes));
    metrics.watchPendingAge(() -> pending.oldest(pendingKeys(volumes)).toMillis() / 1000.0);
  }

  /** Hears the manager's PENDING and LOST events (since when each volume waits): given at its build. */
  dev.csisupervisor.volumes.VolumeListener pendingListener() {
    return e -> {
      if (e.kind() == VolumeEvent.Kind.PENDING || e.kind() == VolumeEvent.Kind.LOST) {
        pending.saw(e.pluginId() + "/" + e.volumeId(), e.time());
      }
    };
  }

  /** The last NodeGetVolumeStats answer of each volume on this node (the others forgotten), sorted. */
  java.util.Map<VolumeStatsCache.Key, dev.csisupervisor.client.VolumeStats> stats(VolumeManager volumes) {
    return stats.current(volumes.list().stream().filter(VolumeRecord::onNode)
        .map(r -> new VolumeStatsCache.Key(r.pluginId(), r.volumeId())).collect(Collectors.toSet()));
  }

  /** The volumes pending now ({@code "<plugin>/<volume>"}), each with since when. */
  SortedMap<String, java.time.Instant> pendingSince(VolumeManager volumes) {
    return pending.refresh(pendingKeys(volumes));
  }

  private static Set<String> pendingKeys(VolumeManager volumes) {
    return volumes.pending().stream().map(r -> r.pluginId() + "/" + r.volumeId()).collect(Collectors.toSet());
  }
}
