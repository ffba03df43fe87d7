package dev.csisupervisor.agent;

import dev.csisupervisor.admin.v1.ListPluginsResponse;
import dev.csisupervisor.admin.v1.ListVolumesResponse;
import dev.csisupervisor.agent.admin.ProtoMapper;
import dev.csisupervisor.agent.admin.AdminVolumeProtos;
import dev.csisupervisor.agent.cluster.ClusterNode;
import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.agent.views.ClusterVolumeHealth;
import dev.csisupervisor.agent.views.JsonText;
import dev.csisupervisor.agent.web.OperatorPages;
import dev.csisupervisor.catalog.ClusterRead;
import dev.csisupervisor.catalog.ClusterView;
import dev.csisupervisor.catalog.PublisherStatus;
import dev.csisupervisor.cli.Format;
import dev.csisupervisor.registry.PluginInfo;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.volumes.VolumeEvent;
import dev.csisupervisor.volumes.VolumeManager;
import dev.csisupervisor.volumes.VolumeRecord;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What the operator page's {@code /api/v1/...} answers, from the running agent: {@code status}, {@code plugins} and
 * {@code volumes} as the admin API answers them and the CLI's {@code --json} prints them; {@code cluster/plugins} and
 * {@code cluster/volumes} as {@code cluster plugins --json} and {@code cluster volume status --json}; and
 * {@code problems}, the page's banner: what is wrong now, since when, and the CLI command that shows more.
 * Thread-safe.
 */
final class OperatorView implements OperatorPages.Source {
  /** How many recent failed mounts the banner keeps, and for how long. */
  static final int RECENT_FAILURES = 20;
  static final Duration RECENT = Duration.ofHours(1);

  private final Agent agent;
  private final Clock clock;
  /** A mount that failed, or a cluster claim refused. */
  private record Failure(String kind, String plugin, String volume, String alloc, String message, Instant time) {}

  private final Deque<Failure> failedMounts = new ArrayDeque<>();
  private volatile boolean ready;

  OperatorView(Agent agent, Clock clock) {
    this.agent = agent;
    this.clock = clock;
  }

  /** The agent has started: the page may answer. */
  void ready() {
    ready = true;
  }

  /** A volume event: a failed mount is kept for the banner. Quick; runs where the event is emitted. */
  void volumeEvent(VolumeEvent e) {
    if (e.kind() == VolumeEvent.Kind.MOUNT_FAILED) {
      failed(new Failure("mount_failed", e.pluginId(), e.volumeId(), e.allocId(), e.message(), e.time()));
    }
  }

  /** A cluster claim was refused (held by another node, or etcd cannot be asked): kept for the banner. */
  void claimRefused(dev.csisupervisor.volumes.VolumeClaim claim, Throwable failure) {
    Throwable t = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    failed(new Failure("claim_refused", claim.pluginId(), claim.volumeId(), claim.allocId(),
        String.valueOf(t.getMessage()), clock.instant()));
  }

  private void failed(Failure f) {
    synchronized (failedMounts) {
      failedMounts.addLast(f);
      while (failedMounts.size() > RECENT_FAILURES) {
        failedMounts.removeFirst();
      }
    }
  }

  @Override
  public Optional<String> json(String name) throws OperatorPages.Unavailable {
    if (!ready) {
      throw new OperatorPages.Unavailable("the agent is starting");
    }
    return switch (name) {
      case "status" -> Optional.of(Format.json(AdminProtos.agentStatus(agent), true));
      case "plugins" -> Optional.of(Format.json(plugins(), true));
      case "volumes" -> Optional.of(Format.json(ListVolumesResponse.newBuilder()
          .addAllVolumes(AdminVolumeProtos.volumes(agent.volumes().list(), agent.volumes())).build(), true));
      case "problems" -> Optional.of(JsonText.write(problems()));
      case "volume-stats" -> Optional.of(JsonText.write(volumeStats()));
      case "cluster/plugins" -> {
        ClusterNode n = node();
        ClusterRead r;
        try {
          r = ClusterView.readAllowingStale(n.config().etcd(), n.config().prefix());
        } catch (RuntimeException e) {
          throw new OperatorPages.Unavailable("cannot read the cluster catalog: " + e.getMessage());
        }
        yield Optional.of(JsonText.write(ClusterViews.plugins(r.snapshot(), r.freshness(), null, false)));
      }
      case "cluster/volumes" -> {
        ClusterNode n = node();
        try {
          dev.csisupervisor.catalog.VolumesSnapshot s = n.volumes().read();
          java.util.Map<String, Object> status = ClusterViews.volumeStatus(s, null, null);
          ClusterVolumeHealth.read(n.volumes(), s, null).addTo(status, null); // conditions and leaks
          yield Optional.of(JsonText.write(status));
        } catch (RuntimeException e) {
          throw new OperatorPages.Unavailable("cannot read the cluster's volumes: " + e.getMessage());
        }
      }
      default -> Optional.empty();
    };
  }

  private ClusterNode node() throws OperatorPages.Unavailable {
    return agent.clusterNode().orElseThrow(() ->
        new OperatorPages.Unavailable("this agent has no cluster: section in its config"));
  }

  /**
   * The page's usage column (no CLI command prints it for every volume: {@code volume stats} asks the plugin for one):
   * per volume on this node the last NodeGetVolumeStats answer the agent got, bytes and inodes as the plugin reported
   * them (0: not reported).
   */
  Map<String, Object> volumeStats() {
    List<Map<String, Object>> out = new ArrayList<>();
    agent.volumeParts().stats().forEach((key, stats) -> {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("plugin", key.plugin());
      m.put("volume", key.volume());
      for (dev.csisupervisor.client.VolumeStats.Usage u : stats.usage()) {
        if (u.unit() != dev.csisupervisor.client.VolumeStats.Unit.UNKNOWN) {
          m.put(u.unit().name().toLowerCase(java.util.Locale.ROOT), Map.of("total", u.total(), "available",
              u.available(), "used", u.used()));
        }
      }
      out.add(m);
    });
    return Map.of("volumes", out);
  }

  /** {@code plugins --json}: the newest instance of each name, controllers first. */
  ListPluginsResponse plugins() {
    ListPluginsResponse.Builder b = ListPluginsResponse.newBuilder();
    for (PluginType t : PluginType.values()) {
      for (PluginInfo p : agent.registry().list(t)) {
        b.addPlugins(ProtoMapper.toProto(p));
      }
    }
    return b.build();
  }

  /**
   * The banner: unhealthy plugins and since when, failed tasks, volumes pending and what each waits for, lost and
   * abnormal volumes, recent failed mounts and refused cluster claims (a refusal names the holder), the catalog disconnected, and the
   * cluster's STUCK items; {@code healthy} when there is none.
   */
  Map<String, Object> problems() {
    Instant now = clock.instant();
    List<Map<String, Object>> out = new ArrayList<>();
    for (PluginType t : PluginType.values()) {
      for (PluginInfo p : agent.registry().list(t)) {
        if (!p.health().healthy()) {
          out.add(problem("plugin_unhealthy", "plugin " + p.name() + " (" + t.label() + ")",
              p.health().message().isEmpty() ? "unhealthy" : p.health().message(), p.health().since(),
              "csi-agent plugin " + p.name(), "plugin:" + p.name()));
        }
      }
    }
    for (TaskStatus task : agent.tasks()) {
      if (task.processState() == TaskStatus.ProcessState.FAILED || task.artifactError() != null) {
        String why = task.artifactError() != null ? "artifact: " + task.artifactError()
            : task.lastFailure() != null ? task.lastFailure() : "the restart policy gave up";
        out.add(problem("task_failed", "task " + task.id(), why, task.lastFailureTime(), "csi-agent status",
            "plugin:" + task.id()));
      }
    }
    VolumeManager volumes = agent.volumes();
    Map<String, String> waiting = volumes.waitingFor();
    agent.volumeParts().pendingSince().forEach((key, since) -> out.add(problem("volume_pending", "volume " + key,
        waiting.getOrDefault(key, "an operation in flight"), since, "csi-agent volume list", "volume:" + key)));
    for (VolumeRecord r : volumes.list()) {
      if (r.hasLost()) {
        String key = r.pluginId() + "/" + r.volumeId();
        out.add(problem("volume_lost", "volume " + key, "a mount the mount table lost (a reboot, an unmount behind"
            + " the agent's back): being mounted again", null, "csi-agent volume list", "volume:" + key));
      }
    }
    volumes.abnormal().forEach((key, message) -> out.add(problem("volume_abnormal", "volume " + key, message, null,
        "csi-agent volume stats --plugin " + key.substring(0, key.indexOf('/')) + " --volume "
            + key.substring(key.indexOf('/') + 1), "volume:" + key)));
    synchronized (failedMounts) {
      for (Failure f : failedMounts) {
        if (Duration.between(f.time(), now).compareTo(RECENT) <= 0) {
          String key = f.plugin() + "/" + f.volume();
          boolean cluster = agent.clusterNode().isPresent();
          out.add(problem(f.kind(), (f.kind().equals("claim_refused") ? "claim" : "mount") + " of volume " + key
              + " for alloc " + f.alloc(), f.message(), f.time(), cluster ? "csi-agent cluster volume status "
              + f.plugin() + " " + f.volume() : "csi-agent volume list", cluster ? "cluster-volume:" + key
              : "volume:" + key));
        }
      }
    }
    agent.clusterNode().ifPresent(n -> {
      PublisherStatus s = n.status();
      if (!s.connected()) {
        out.add(problem("catalog_disconnected", "cluster catalog of node " + n.config().nodeId(),
            "not connected to etcd" + (s.lastError().isEmpty() ? "" : ": " + s.lastError()) + " (new cluster claims"
                + " are refused; mounted volumes stay)", null, "csi-agent status", "cluster"));
      }
    });
    agent.volumeParts().clusterReads().last().ifPresent(r -> {
      for (ClusterViews.Stuck s : ClusterViews.stuckItems(r.snapshot())) {
        out.add(problem("cluster_stuck", "STUCK (" + s.kind().label() + ")", s.line(), null,
            "csi-agent cluster volume status", "cluster"));
      }
    });
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("healthy", out.isEmpty());
    m.put("checked_at", now.toString());
    m.put("problems", out);
    return m;
  }

  private static Map<String, Object> problem(String kind, String subject, String message, Instant since, String more,
      String link) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("kind", kind);
    m.put("subject", subject);
    m.put("message", message);
    m.put("since", since == null ? null : since.toString());
    m.put("more", more);
    m.put("link", link);
    return m;
  }
}
