package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.EtcdException;
import dev.csisupervisor.catalog.VolumeStateException;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Mixin;

/** One etcd session for a command: its errors are one line and exit code 1. */
abstract class ClusterVolumeSubcommand implements Callable<Integer> {
  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  @Mixin
  ClusterCommand.EtcdCliOptions etcd = new ClusterCommand.EtcdCliOptions();

  abstract int run(ClusterVolumes volumes, PrintWriter out) throws VolumeStateException;

  /** What the command did: {@code text} for people, or with {@code --json} the object {@code json}. */
  final void say(PrintWriter out, String text, Map<String, Object> json) {
    if (etcd.json) {
      ClusterCommand.printJson(out, json);
    } else {
      out.println(text);
    }
  }

  /** A request as {@code --json} shows it, with its progress (as it stands now). */
  @SuppressWarnings("unchecked")
  static Map<String, Object> request(ClusterVolumeRequest r, ClusterVolumes v) {
    return (Map<String, Object>) ClusterViews.requestsJson(v.read(), x -> x.kind() == r.kind()
            && x.pluginId().equals(r.pluginId()) && x.name().equals(r.name())).stream().findFirst()
        .orElse(Map.of("kind", r.kind().name(), "plugin", r.pluginId(), "name", r.name(), "state", r.state().name()));
  }

  /** Writes a request into etcd (its checks in one transaction), returning it as stored. */
  interface Asker {
    ClusterVolumeRequest ask(ClusterVolumeRequest request) throws VolumeStateException;
  }

  /** The exit code of a command {@link #askAndAwait} ended, when it returned empty. */
  int exit = ExitCodes.OK;

  /**
   * What a create, snapshot, modify or register shares: capabilities first ({@link ClusterVolumeRequests#noController}),
   * then the request asked, then its outcome awaited (where it is said on the error stream each time it changes, with
   * {@code progress}). Withdrawn, cancelled, failed (the plugin's words, then {@code afterFailure}), not done in time,
   * or asked with {@code --wait 0}: said here, the command's exit code in {@link #exit}, and empty returned.
   *
   * @return the request done, for the command to tell what it made
   */
  final Optional<ClusterVolumeRequest> askAndAwait(ClusterVolumes v, PrintWriter out, ClusterVolumeRequest asked,
      Asker asker, ClusterVolumeRequests.RequestOptions options, boolean progress, String afterFailure)
      throws VolumeStateException {
    PrintWriter err = spec.commandLine().getErr();
    Duration wait = options.waitFor();
    Optional<String> none = ClusterVolumeRequests.noController(v, asked);
    if (none.isPresent()) {
      exit = ClusterVolumeRequests.refused(err, asked, none.get());
      return Optional.empty();
    }
    ClusterVolumeRequest stored = asker.ask(asked);
    exit = ExitCodes.OK;
    if (wait.isZero() && stored.state() == ClusterVolumeRequest.State.PENDING) {
      say(out, "asked: " + stored.describe() + " (csi-agent cluster volume status shows its progress)",
          Map.of("asked", true, "request", request(stored, v)));
      return Optional.empty();
    }
    Optional<ClusterVolumeRequest> r = ClusterVolumeRequests.await(v, asked.kind(), asked.pluginId(), asked.name(),
        wait, x -> x.isEmpty() || x.get().state() != ClusterVolumeRequest.State.PENDING, progress ? err : null);
    exit = ExitCodes.FAILURE;
    if (r.isEmpty() || r.get().state() == ClusterVolumeRequest.State.CANCELLED) {
      err.println("csi-agent: " + asked.describe() + " was withdrawn meanwhile" + (r.isEmpty() ? ""
          : " after it was sent: its controller agent deletes what it made"));
      return Optional.empty();
    }
    switch (r.get().state()) {
      case DONE -> {
        exit = ExitCodes.OK;
        return r;
      }
      case FAILED -> err.println("csi-agent: " + r.get().message() + afterFailure);
      default -> ClusterVolumeRequests.notDone(err, r.get(), options.waitSeconds, v);
    }
    return Optional.empty();
  }

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

  /** {@code k=v,k2=v2} per segment. */
  static List<Map<String, String>> segments(String field, List<String> given) {
    List<Map<String, String>> segments = new ArrayList<>();
    for (String seg : given) {
      Map<String, String> kv = new TreeMap<>();
      for (String pair : seg.split(",")) {
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException(field + " must be KEY=VALUE[,KEY=VALUE...], got '" + seg + "'");
        }
        kv.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
      }
      segments.add(kv);
    }
    return segments;
  }
}
