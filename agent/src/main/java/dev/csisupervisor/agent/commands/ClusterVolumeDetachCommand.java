package dev.csisupervisor.agent.commands;

import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.DetachOrder;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.locks.LockSupport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code csi-agent cluster volume detach --node N --force}: the claims of a node that is gone, released. Where the
 * plugin id has a controller agent that publishes, the detach is ordered ({@link DetachOrder}) and that agent
 * unpublishes the volume from the node first (as Nomad's {@code volume detach} and the Kubernetes out-of-service
 * taint do); where none does, or with {@code --no-unpublish}, the claims are deleted without any unpublish.
 */
@Command(name = "detach", mixinStandardHelpOptions = true,
    description = "With --force: releases the claims (of one volume, or all) of a node that is gone (lost, or stopped "
        + "for good). Where the plugin id's controller agent publishes, it calls ControllerUnpublishVolume for the "
        + "node first, then the claims go; where none does (or with --no-unpublish) they are deleted WITHOUT any "
        + "unpublish: detach the disks by hand first.")
final class ClusterVolumeDetachCommand extends ClusterVolumeSubcommand {
  private static final Duration POLL = Duration.ofMillis(200);

  @Option(names = "--node", required = true, paramLabel = "NODE") String node;
  @Option(names = "--force", description = "Required: say that you mean it.") boolean force;
  @Option(names = "--no-unpublish", description = "Delete the claims without asking the controller agent to unpublish.")
  boolean noUnpublish;
  @Option(names = "--wait", paramLabel = "SECONDS", defaultValue = "60",
      description = "How long to wait for the controller agents' unpublishes (default 60).")
  int waitSeconds;
  @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
  @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

  @Override
  int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
    if (!force) {
      throw new IllegalArgumentException("detach needs --force: it releases node " + node + "'s claims, which its "
          + "agent releases by itself when it is back (a lost node's go after detach_after, if set)");
    }
    if (waitSeconds < 0) {
      throw new IllegalArgumentException("--wait must not be negative, got " + waitSeconds);
    }
    DetachOrder order = new DetachOrder(node, Optional.ofNullable(plugin), Optional.ofNullable(volumeId),
        Instant.now());
    VolumesSnapshot s = v.read();
    if (s.liveNodes().contains(node)) {
      throw new VolumeStateException("node " + node + " is alive (its agent holds its node key): it releases its own "
          + "claims as its tasks unmount; detach --force is for a node that is gone (lost, or stopped for good)");
    }
    List<ClusterClaim> claims = s.claims().stream()
        .filter(c -> c.nodeId().equals(node) && order.covers(c.pluginId(), c.volumeId())).toList();
    Set<String> unpublishing = new TreeSet<>();
    if (!noUnpublish) {
      claims.stream().map(ClusterClaim::pluginId).distinct()
          .filter(p -> s.controllers().containsKey(p) && v.controllerPublishes(p)).forEach(unpublishing::add);
    }
    List<String> lines = new ArrayList<>();
    List<Map<String, Object>> released = new ArrayList<>();
    // Without a controller agent that publishes: deleted now, without any unpublish (one delete per volume).
    for (List<String> pv : claims.stream().filter(c -> !unpublishing.contains(c.pluginId()))
        .map(c -> List.of(c.pluginId(), c.volumeId())).distinct().toList()) {
      v.forceDetach(node, Optional.of(pv.get(0)), Optional.of(pv.get(1))).forEach(gone -> {
        lines.add("released " + describe(gone) + " WITHOUT ControllerUnpublishVolume ("
            + (noUnpublish ? "--no-unpublish" : "no controller agent of " + gone.pluginId() + " publishes")
            + "): detach the disk from " + node + " by hand if it is attached");
        released.add(json(gone, false, ""));
      });
    }
    int code = ExitCodes.OK;
    if (!unpublishing.isEmpty()) {
      code = ordered(v, order, s, claims, unpublishing, lines, released);
    }
    if (claims.isEmpty()) {
      lines.add("node " + node + " has no claim" + (plugin == null ? "" : " of " + plugin
          + (volumeId == null ? "" : "/" + volumeId)) + ": nothing to detach");
    }
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("node", node);
    json.put("released", released);
    json.put("done", code == ExitCodes.OK);
    say(out, String.join("\n", lines), json);
    return code;
  }

  /** The detach ordered, and waited for: the claims the controller agents fence, each after its unpublish. */
  private int ordered(ClusterVolumes v, DetachOrder order, VolumesSnapshot before, List<ClusterClaim> claims,
      Set<String> unpublishing, List<String> lines, List<Map<String, Object>> released) {
    v.orderDetach(order);
    List<ClusterClaim> waiting = new ArrayList<>(claims.stream().filter(c -> unpublishing.contains(c.pluginId())).toList());
    long deadline = System.nanoTime() + Duration.ofSeconds(waitSeconds).toNanos();
    while (true) {
      VolumesSnapshot now = v.read();
      for (ClusterClaim c : List.copyOf(waiting)) {
        boolean gone = now.claims().stream().noneMatch(x -> x.nodeId().equals(node)
            && x.pluginId().equals(c.pluginId()) && x.volumeId().equals(c.volumeId()) && x.allocId().equals(c.allocId()));
        if (gone) {
          waiting.remove(c);
          boolean attached = before.attachmentsOf(c.pluginId(), c.volumeId()).stream()
              .map(ClusterAttachment::nodeId).anyMatch(node::equals);
          String agent = before.controllers().getOrDefault(c.pluginId(), "?");
          lines.add("released " + describe(c) + (attached ? " after ControllerUnpublishVolume to " + node
              + " by controller agent " + agent : " (it had no attachment; controller agent " + agent + ")"));
          released.add(json(c, attached, agent));
        }
      }
      if (waiting.isEmpty()) {
        v.withdrawDetach(node);
        return ExitCodes.OK;
      }
      if (System.nanoTime() >= deadline) {
        for (ClusterClaim c : waiting) {
          lines.add("still waiting for controller agent " + before.controllers().getOrDefault(c.pluginId(), "?")
              + " to unpublish " + describe(c) + " (see cluster volume status " + c.pluginId() + " "
              + c.volumeId() + "); the order stays and is carried out when it can");
        }
        return ExitCodes.FAILURE;
      }
      LockSupport.parkNanos(POLL.toNanos());
    }
  }

  private String describe(ClusterClaim c) {
    return "claim of " + c.pluginId() + "/" + c.volumeId() + " by " + node + " alloc " + c.allocId();
  }

  private static Map<String, Object> json(ClusterClaim c, boolean unpublished, String agent) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("plugin", c.pluginId());
    m.put("volume", c.volumeId());
    m.put("alloc", c.allocId());
    m.put("mode", c.mode().name());
    m.put("unpublished", unpublished);
    if (!agent.isEmpty()) {
      m.put("controller_agent", agent);
    }
    return m;
  }
}
