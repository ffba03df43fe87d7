package dev.csisupervisor.agent.commands;

import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.catalog.ClusterAttachment;
import dev.csisupervisor.catalog.ClusterClaim;
import dev.csisupervisor.catalog.ClusterVolume;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumeAccessMode;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.catalog.VolumesSnapshot;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code csi-agent cluster volume register|deregister|list|status|detach}: cluster volumes in etcd, from any
 * machine. A volume is created by the agent that runs its controller ({@code csi-agent volume create}) and then
 * registered here by id, as is an existing disk.
 */
@Command(name = "volume", mixinStandardHelpOptions = true,
    description = "Cluster volumes in etcd: registered volumes, their claims and attachments.",
    subcommands = {ClusterVolumeCommand.Register.class, ClusterVolumeCommand.Deregister.class,
        ClusterVolumeCommand.ListVolumes.class, ClusterVolumeCommand.Status.class, ClusterVolumeCommand.Detach.class})
final class ClusterVolumeCommand implements Runnable {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    throw new CommandLine.ParameterException(spec.commandLine(),
        "Missing command: register, deregister, list, status or detach");
  }

  /** One etcd session for a command: its errors are one line and exit code 1. */
  abstract static class VolumeCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Mixin
    ClusterCommand.EtcdCliOptions etcd = new ClusterCommand.EtcdCliOptions();

    abstract int run(ClusterVolumes volumes, PrintWriter out) throws VolumeStateException;

    @Override
    public final Integer call() {
      CommandLine cmd = spec.commandLine();
      ClusterCommand.EtcdCliOptions.Target t = etcd.target(cmd);
      try (ClusterVolumes v = ClusterVolumes.builder().etcd(t.etcd()).prefix(t.prefix()).nodeId("csi-agent-cli").build()) {
        return run(v, cmd.getOut());
      } catch (EtcdException e) {
        cmd.getErr().println("csi-agent: cannot reach etcd: " + e.getMessage());
        return ExitCodes.FAILURE;
      } catch (VolumeStateException e) {
        cmd.getErr().println("csi-agent: " + e.getMessage());
        return ExitCodes.FAILURE;
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(cmd, e.getMessage());
      }
    }
  }

  @Command(name = "register", mixinStandardHelpOptions = true,
      description = "Registers an existing volume (a disk) by id: what claims check against.")
  static final class Register extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;
    @Option(names = "--capacity", paramLabel = "BYTES", description = "Its capacity in bytes (default 0: unknown).")
    long capacity;
    @Option(names = "--access-mode", paramLabel = "MODE", split = ",",
        description = "Access modes a claim may ask for (default: any), e.g. single-node-writer,multi-node-reader-only.")
    List<String> modes = new ArrayList<>();
    @Option(names = "--topology", paramLabel = "KEY=VALUE[,...]",
        description = "A segment of the volume's accessible topology; repeat for more segments (default: everywhere).")
    List<String> topology = new ArrayList<>();
    @Option(names = "--parameter", paramLabel = "KEY=VALUE") Map<String, String> parameters = new TreeMap<>();
    @Option(names = "--context", paramLabel = "KEY=VALUE", description = "Its volume context (never secrets).")
    Map<String, String> context = new TreeMap<>();

    @Override
    int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
      Set<VolumeAccessMode> m = EnumSet.noneOf(VolumeAccessMode.class);
      for (String s : modes) {
        m.add(VolumeAccessMode.parse("--access-mode", s));
      }
      List<Map<String, String>> segments = new ArrayList<>();
      for (String seg : topology) {
        Map<String, String> kv = new TreeMap<>();
        for (String pair : seg.split(",")) {
          int eq = pair.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--topology must be KEY=VALUE[,KEY=VALUE...], got '" + seg + "'");
          }
          kv.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
        }
        segments.add(kv);
      }
      boolean wrote = v.register(new ClusterVolume(plugin, volumeId, capacity, m, segments, parameters, context));
      out.println(wrote ? "registered " + plugin + "/" + volumeId : plugin + "/" + volumeId + " was registered already");
      return ExitCodes.OK;
    }
  }

  @Command(name = "deregister", mixinStandardHelpOptions = true,
      description = "Removes a volume's record; refused while it is claimed or attached.")
  static final class Deregister extends VolumeCommand {
    @Parameters(index = "0", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", paramLabel = "VOLUME_ID") String volumeId;

    @Override
    int run(ClusterVolumes v, PrintWriter out) throws VolumeStateException {
      out.println(v.deregister(plugin, volumeId) ? "deregistered " + plugin + "/" + volumeId
          : plugin + "/" + volumeId + " was not registered");
      return ExitCodes.OK;
    }
  }

  @Command(name = "list", mixinStandardHelpOptions = true, description = "Every registered volume, with its claims.")
  static final class ListVolumes extends VolumeCommand {
    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      VolumesSnapshot s = v.read();
      if (etcd.json) {
        List<Object> all = new ArrayList<>();
        s.volumes().forEach(vol -> all.add(json(vol, s)));
        ClusterCommand.printJson(out, Map.of("revision", s.revision(), "volumes", all));
        return ExitCodes.OK;
      }
      out.printf("%-20s %-40s %-8s %s%n", "PLUGIN", "VOLUME", "CLAIMS", "ATTACHED TO");
      for (ClusterVolume vol : s.volumes()) {
        out.printf("%-20s %-40s %-8d %s%n", vol.pluginId(), vol.volumeId(), s.claimsOf(vol.pluginId(), vol.volumeId()).size(),
            s.attachmentsOf(vol.pluginId(), vol.volumeId()).stream().map(a -> a.nodeId() + "(" + a.state() + ")").toList());
      }
      return ExitCodes.OK;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true,
      description = "Claims, attachments and stuck items of every volume (or one), and the controller agent per plugin.")
  static final class Status extends VolumeCommand {
    @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      VolumesSnapshot s = v.read();
      List<String> stuck = stuck(s);
      if (etcd.json) {
        List<Object> vols = new ArrayList<>();
        s.volumes().stream().filter(this::selected).forEach(vol -> vols.add(json(vol, s)));
        ClusterCommand.printJson(out, Map.of("revision", s.revision(), "controllers", new TreeMap<>(s.controllers()),
            "volumes", vols, "stuck", stuck));
        return ExitCodes.OK;
      }
      out.println("controller agents: " + (s.controllers().isEmpty() ? "none elected" : new TreeMap<>(s.controllers())));
      for (ClusterVolume vol : s.volumes()) {
        if (!selected(vol)) {
          continue;
        }
        out.println(vol.pluginId() + "/" + vol.volumeId() + (vol.accessModes().isEmpty() ? "" : " " + vol.accessModes())
            + (vol.accessibleTopology().isEmpty() ? "" : " at " + vol.accessibleTopology()));
        for (ClusterClaim c : s.claimsOf(vol.pluginId(), vol.volumeId())) {
          out.println("  claim " + c.holder() + " " + c.mode() + (c.readOnly() ? " read-only" : "") + " since " + c.since()
              + (s.liveNodes().contains(c.nodeId()) ? "" : " (NODE LOST)"));
        }
        for (ClusterAttachment a : s.attachmentsOf(vol.pluginId(), vol.volumeId())) {
          out.println("  attachment node " + a.nodeId() + " " + a.state() + " by " + a.controllerNodeId() + " since "
              + a.since() + (a.message().isEmpty() ? "" : ": " + a.message()));
        }
      }
      stuck.forEach(line -> out.println("STUCK: " + line));
      return ExitCodes.OK;
    }

    private boolean selected(ClusterVolume vol) {
      return (plugin == null || plugin.equals(vol.pluginId())) && (volumeId == null || volumeId.equals(vol.volumeId()));
    }
  }

  @Command(name = "detach", mixinStandardHelpOptions = true,
      description = "With --force: deletes a node's claims (of one volume, or all) and its attachments WITHOUT any "
          + "controller unpublish or node unmount. Only for a node that is gone for good, once its disks are "
          + "detached by hand: another node may then attach and write them.")
  static final class Detach extends VolumeCommand {
    @Option(names = "--node", required = true, paramLabel = "NODE") String node;
    @Option(names = "--force", description = "Required: say that you mean it.") boolean force;
    @Parameters(index = "0", arity = "0..1", paramLabel = "PLUGIN") String plugin;
    @Parameters(index = "1", arity = "0..1", paramLabel = "VOLUME_ID") String volumeId;

    @Override
    int run(ClusterVolumes v, PrintWriter out) {
      if (!force) {
        throw new IllegalArgumentException("detach needs --force: it releases node " + node + "'s claims without any "
            + "unpublish or unmount (a lost node's claims go by themselves once it is back, or after detach_after)");
      }
      List<ClusterClaim> gone = v.forceDetach(node, Optional.ofNullable(plugin), Optional.ofNullable(volumeId));
      out.println("released " + gone.size() + " claim(s) of node " + node + " without unpublish or unmount: "
          + gone.stream().map(c -> c.pluginId() + "/" + c.volumeId() + " alloc " + c.allocId()).toList());
      return ExitCodes.OK;
    }
  }

  /** What waits and why: claims of lost nodes, failed attachments, claims of plugins with no controller agent. */
  static List<String> stuck(VolumesSnapshot s) {
    List<String> out = new ArrayList<>();
    for (ClusterClaim c : s.claims()) {
      if (!s.liveNodes().contains(c.nodeId())) {
        out.add("claim of " + c.pluginId() + "/" + c.volumeId() + " by " + c.holder() + ": the node is lost; it stays "
            + "until the node is back, detach_after fences it, or csi-agent cluster volume detach --node " + c.nodeId()
            + " --force");
      }
    }
    for (ClusterAttachment a : s.attachments()) {
      if (a.state() == ClusterAttachment.State.FAILED) {
        out.add("attachment of " + a.pluginId() + "/" + a.volumeId() + " to node " + a.nodeId() + ": " + a.message());
      }
    }
    return out;
  }

  static Map<String, Object> json(ClusterVolume vol, VolumesSnapshot s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("plugin", vol.pluginId());
    m.put("volume", vol.volumeId());
    m.put("capacityBytes", vol.capacityBytes());
    m.put("accessModes", vol.accessModes().stream().map(Enum::name).sorted().toList());
    m.put("accessibleTopology", vol.accessibleTopology());
    m.put("parameters", vol.parameters());
    m.put("context", vol.volumeContext());
    List<Object> claims = new ArrayList<>();
    for (ClusterClaim c : s.claimsOf(vol.pluginId(), vol.volumeId())) {
      claims.add(Map.of("node", c.nodeId(), "alloc", c.allocId(), "mode", c.mode().name(), "readOnly", c.readOnly(),
          "since", c.since().toString(), "nodeLive", s.liveNodes().contains(c.nodeId())));
    }
    m.put("claims", claims);
    List<Object> attachments = new ArrayList<>();
    for (ClusterAttachment a : s.attachmentsOf(vol.pluginId(), vol.volumeId())) {
      attachments.add(Map.of("node", a.nodeId(), "state", a.state().name(), "controller", a.controllerNodeId(),
          "since", a.since().toString(), "message", a.message()));
    }
    m.put("attachments", attachments);
    return m;
  }
}
