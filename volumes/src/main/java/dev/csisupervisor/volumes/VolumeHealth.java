package dev.csisupervisor.volumes;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.CsiCapabilities;
import dev.csisupervisor.client.VolumeStats;
import dev.csisupervisor.volumes.ReadyPlugins.NodePlugin;
import dev.csisupervisor.volumes.VolumeException.Reason;
import dev.csisupervisor.volumes.VolumeRecord.AllocPhase;
import dev.csisupervisor.volumes.VolumeRecord.UsageRecord;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the node plugin says of its mounted volumes: {@code NodeGetVolumeStats} on demand, and a health round
 * every interval that reads the condition of each published volume whose plugin reports conditions, telling
 * listeners when one turns abnormal and when it is normal again. Stats run on the volume's lane.
 */
final class VolumeHealth {
  private static final Logger log = LoggerFactory.getLogger(VolumeHealth.class);

  private final VolumeContext ctx;
  private final ScheduledExecutorService scheduler;
  private final Duration interval;
  /** Volume -> the message of its abnormal condition. */
  private final Map<VolumeKey, String> abnormal = new ConcurrentHashMap<>();
  private volatile boolean closed;
  private volatile ScheduledFuture<?> round;

  /** @param interval between health rounds; zero: none */
  VolumeHealth(VolumeContext ctx, ScheduledExecutorService scheduler, Duration interval) {
    this.ctx = ctx;
    this.scheduler = scheduler;
    this.interval = interval;
  }

  /** The stats of {@code key} as published (for {@code allocId}, or the first allocation that has it). */
  CompletableFuture<VolumeStats> stats(VolumeKey key, Optional<String> allocId) {
    return ctx.lanes().submit(key, () -> statsOnLane(key, allocId));
  }

  private CompletableFuture<VolumeStats> statsOnLane(VolumeKey key, Optional<String> allocId) {
    VolumeRecord r = ctx.records().get(key);
    Optional<Map.Entry<String, UsageRecord>> published = r == null ? Optional.empty()
        : r.usages().values().stream()
            .flatMap(u -> u.allocs().entrySet().stream().filter(a -> a.getValue() == AllocPhase.PUBLISHED)
                .filter(a -> allocId.isEmpty() || allocId.get().equals(a.getKey()))
                .map(a -> Map.entry(a.getKey(), u)))
            .findFirst();
    if (published.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.NOT_MOUNTED, "volume " + key
          + " is not mounted on this node" + allocId.map(a -> " for alloc " + a).orElse("")));
    }
    Optional<NodePlugin> node = ctx.plugins().readyNode(key.pluginId());
    if (node.isEmpty()) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.PLUGIN_UNAVAILABLE,
          "node plugin " + key.pluginId() + " is not ready"));
    }
    if (!node.get().has(CsiCapabilities.GET_VOLUME_STATS)) {
      return CompletableFuture.failedFuture(new VolumeException(Reason.UNSUPPORTED,
          "node plugin " + key.pluginId() + " does not offer GET_VOLUME_STATS"));
    }
    UsageRecord u = published.get().getValue();
    // The paths as the plugin sees them (a containerised plugin's mount point), as at stage and publish.
    Path target = node.get().pluginPath(r.targetPath(published.get().getKey(), u.usage()));
    Optional<Path> staging = r.stagingPathOf(u).map(node.get()::pluginPath);
    return ctx.calls().call("NodeGetVolumeStats", "stats of " + key, false,
        () -> node.get().client().nodeGetVolumeStatsAsync(key.volumeId(), target, staging));
  }

  /** The next health round, an interval from now (one-shot tasks: the next is scheduled by this one). */
  void start() {
    if (interval.isZero() || closed) {
      return;
    }
    try {
      round = scheduler.schedule(() -> {
        try {
          checkConditions();
        } finally {
          start();
        }
      }, interval.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      log.debug("scheduler stopped: no more volume health rounds");
    }
  }

  /** One health round: the condition of every published volume whose plugin reports conditions. */
  private void checkConditions() {
    if (closed) {
      return;
    }
    for (VolumeRecord r : ctx.records().values()) {
      boolean published = r.usages().values().stream().anyMatch(UsageRecord::hasPublished);
      Optional<NodePlugin> node = ctx.plugins().readyNode(r.pluginId());
      if (!published || node.isEmpty() || !node.get().has(CsiCapabilities.GET_VOLUME_STATS)
          || !node.get().has(CsiCapabilities.VOLUME_CONDITION)) {
        continue;
      }
      VolumeKey key = r.key();
      ctx.lanes().submit(key, () -> statsOnLane(key, Optional.empty())).whenComplete((stats, e) -> {
        if (e != null) {
          log.debug("condition of {} not read: {}", key, Futures.unwrap(e).getMessage());
          return;
        }
        stats.condition().ifPresent(c -> {
          String before = c.abnormal() ? abnormal.put(key, c.message()) : abnormal.remove(key);
          if (c.abnormal() && before == null) {
            log.warn("volume {} is abnormal: {}", key, c.message());
            ctx.events().emit(VolumeEvent.Kind.ABNORMAL, key, "", c.message());
          } else if (!c.abnormal() && before != null) {
            log.info("volume {} is normal again", key);
            ctx.events().emit(VolumeEvent.Kind.NORMAL, key, "", c.message());
          }
        });
      });
    }
  }

  /** {@code key} is gone from this node: its condition with it. */
  void forget(VolumeKey key) {
    abnormal.remove(key);
  }

  /** Volume (as text) -> its abnormal condition's message, sorted. */
  Map<String, String> abnormal() {
    Map<String, String> out = new TreeMap<>();
    abnormal.forEach((k, v) -> out.put(k.toString(), v));
    return out;
  }

  void close() {
    closed = true;
    ScheduledFuture<?> r = round;
    if (r != null) {
      r.cancel(false);
    }
  }
}
