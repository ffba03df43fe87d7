package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumeSource;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.cli.ExitCodes;
import dev.csisupervisor.client.CsiCapabilities;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import picocli.CommandLine.Option;

/** What the requests share (create, delete, snapshot, modify, register): their options, who can act on it, the wait for its outcome, how it is shown. */
final class ClusterVolumeRequests {
  private ClusterVolumeRequests() {}

  /** How often a waiting create or delete reads its request again. */
  private static final Duration POLL = Duration.ofMillis(200);

  /** The options every request shares: the secrets file and the wait. */
  static final class RequestOptions {
    @Option(names = "--secrets-file", paramLabel = "FILE",
        description = "An absolute path the controller agent reads the call's secrets from, on its own machine "
            + "(key=value lines); only the path is written to etcd, never a secret.")
    String secretsFile;

    @Option(names = "--wait", paramLabel = "SECONDS", defaultValue = "60",
        description = "How long to wait for the controller agent's outcome (default 60; 0: ask and return).")
    int waitSeconds;

    Optional<Path> secretsFile() {
      if (secretsFile == null) {
        return Optional.empty();
      }
      Path p;
      try {
        p = Path.of(secretsFile);
      } catch (java.nio.file.InvalidPathException e) {
        throw new IllegalArgumentException("--secrets-file is not a path: '" + secretsFile + "'", e);
      }
      if (!p.isAbsolute()) {
        throw new IllegalArgumentException("--secrets-file must be an absolute path (the controller agent reads it on "
            + "its own machine), got '" + secretsFile + "'");
      }
      return Optional.of(p);
    }

    Duration waitFor() {
      if (waitSeconds < 0) {
        throw new IllegalArgumentException("--wait must not be negative, got " + waitSeconds);
      }
      return Duration.ofSeconds(waitSeconds);
    }
  }

  /**
   * Capabilities first: refuses a request no agent can act on now. The plugin id unknown in the catalog is a bad
   * argument; none of its controllers healthy with every capability the request {@link RequestCapabilities#needs} is said with what
   * each controller has ({@code no healthy controller of plugin ebs offers CREATE_DELETE_SNAPSHOT (n1:
   * CREATE_DELETE_VOLUME, PUBLISH_UNPUBLISH_VOLUME; n2: unhealthy)}).
   *
   * @return why not, or empty if some controller agent can act
   */
  static Optional<String> noController(ClusterVolumes v, ClusterVolumeRequest r) {
    return noControllerOffering(v, r.pluginId(), dev.csisupervisor.agent.cluster.RequestCapabilities.needs(r))
        .map(why -> why + ": nothing was asked" + (r.kind() == ClusterVolumeRequest.Kind.REGISTER
            ? " (--no-validate registers it without validation)" : ""));
  }

  /**
   * Why no agent can act for calls that need {@code needs}: none of the plugin id's controllers in the catalog is
   * healthy and offers them all (each named with what it has: {@code n1: CREATE_DELETE_VOLUME}, or unhealthy).
   *
   * @return why not, or empty if one can
   * @throws IllegalArgumentException naming PLUGIN if no controller of it is registered at all
   */
  static Optional<String> noControllerOffering(ClusterVolumes v, String plugin, Set<String> needs) {
    List<CatalogEntry> controllers = v.controllersOf(plugin);
    if (controllers.isEmpty()) {
      throw new IllegalArgumentException("PLUGIN: no controller plugin '" + plugin + "' is registered in the cluster "
          + "(csi-agent cluster plugins lists what is)");
    }
    List<String> what = new ArrayList<>();
    for (CatalogEntry e : controllers) {
      if (e.healthy() && e.controllerCapabilities().containsAll(needs)) {
        return Optional.empty();
      }
      what.add(e.nodeId() + ": " + (!e.healthy() ? "unhealthy" + (e.healthMessage().isEmpty() ? ""
          : " (" + e.healthMessage() + ")") : e.controllerCapabilities().isEmpty() ? "no controller capabilities"
          : String.join(", ", new TreeSet<>(e.controllerCapabilities()))));
    }
    return Optional.of("no healthy controller of plugin " + plugin + (needs.isEmpty() ? ""
        : " offers " + String.join(" and ", new TreeSet<>(needs))) + " (" + String.join("; ", what) + ")");
  }

  /** Says why nothing was asked ({@link #noController}), on the error stream: the command's exit code. */
  static int refused(PrintWriter err, ClusterVolumeRequest r, String why) {
    err.println("csi-agent: " + r.describe() + " refused: " + why);
    return ExitCodes.FAILURE;
  }

  /** {@code KEY=VALUE} options as given, each key named if empty: {@code --mutable-parameter: a key must not be ...}. */
  static java.util.Map<String, String> keyValues(String field, java.util.Map<String, String> given) {
    for (java.util.Map.Entry<String, String> e : given.entrySet()) {
      if (e.getKey().isBlank()) {
        throw new IllegalArgumentException(field + " must be KEY=VALUE with a non-empty KEY, got '" + e.getKey() + "="
            + e.getValue() + "'");
      }
    }
    return given;
  }

  /** Reads the request until it is done, failed or the wait is over. */
  static Optional<ClusterVolumeRequest> await(ClusterVolumes v, ClusterVolumeRequest.Kind kind, String plugin,
      String name, Duration wait, java.util.function.Predicate<Optional<ClusterVolumeRequest>> over) {
    return await(v, kind, plugin, name, wait, over, null);
  }

  /**
   * Reads the request until it is done, failed or the wait is over; with {@code progress}, says on it where the
   * request is each time that changes (CreateSnapshot in flight, "cut at T, not ready", waiting for its snapshot).
   */
  static Optional<ClusterVolumeRequest> await(ClusterVolumes v, ClusterVolumeRequest.Kind kind, String plugin,
      String name, Duration wait, java.util.function.Predicate<Optional<ClusterVolumeRequest>> over,
      PrintWriter progress) {
    long end = System.nanoTime() + wait.toNanos();
    long seen = -1;
    String said = "";
    while (true) {
      Optional<ClusterVolumeRequest> r = v.request(kind, plugin, name);
      if (over.test(r) || System.nanoTime() - end >= 0) {
        return r;
      }
      if (progress != null && r.isPresent() && r.get().revision() != seen) {
        seen = r.get().revision();
        String now = ClusterViews.progress(r.get(), v.read());
        if (!now.equals(said)) {
          said = now;
          progress.println("csi-agent: " + r.get().describe() + ": " + now);
        }
      }
      try {
        Thread.sleep(POLL.toMillis()); // the CLI's poll of etcd while it waits for the controller agent
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return r;
      }
    }
  }

  /** A wait that ran out: where the request is, and that it stays asked. */
  static int notDone(PrintWriter err, ClusterVolumeRequest r, int seconds, ClusterVolumes v) {
    String kind = r.kind().segment();
    err.println("csi-agent: " + r.describe() + " not done after " + seconds + " s: " + ClusterViews.progress(r, v.read())
        + ". It stays asked: cluster volume status shows it, the same " + kind + " waits for it again, cluster volume "
        + "cancel " + kind + " " + r.pluginId() + " " + r.name() + " withdraws it");
    return ExitCodes.FAILURE;
  }

  /** The requests not done (in flight, waiting, retried, failed), one line each. */
  static void printRequests(VolumesSnapshot s, java.util.function.Predicate<ClusterVolumeRequest> selected,
      PrintWriter out) {
    List<ClusterVolumeRequest> open = s.requests().stream()
        .filter(r -> r.state() != ClusterVolumeRequest.State.DONE && selected.test(r)).toList();
    if (!open.isEmpty()) {
      out.println("requests:");
      open.forEach(r -> out.println("  " + r.describe() + " asked " + r.requested() + ": " + ClusterViews.progress(r, s)));
    }
  }
}
