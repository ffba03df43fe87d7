package dev.csisupervisor.agent.commands;

import dev.csisupervisor.agent.views.ClusterViews;
import dev.csisupervisor.catalog.CatalogEntry;
import dev.csisupervisor.catalog.ClusterVolumeRequest;
import dev.csisupervisor.catalog.ClusterVolumes;
import dev.csisupervisor.catalog.VolumesSnapshot;
import dev.csisupervisor.cli.ExitCodes;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.Option;

/** What a create or delete shares: its options, who can act on it, the wait for its outcome, how it is shown. */
final class ClusterVolumeRequests {
  private ClusterVolumeRequests() {}

  /** How often a waiting create or delete reads its request again. */
  private static final Duration POLL = Duration.ofMillis(200);

  /** The options a create or delete shares: the secrets file and the wait. */
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
   * Refuses a request no agent can act on now: the plugin id unknown in the catalog (a bad argument), or none of its
   * controllers healthy with CREATE_DELETE_VOLUME (said with what there is).
   *
   * @return why not, or empty if some controller agent can act
   */
  static Optional<String> noController(ClusterVolumes v, String plugin) {
    List<CatalogEntry> controllers = v.controllersOf(plugin);
    if (controllers.isEmpty()) {
      throw new IllegalArgumentException("PLUGIN: no controller plugin '" + plugin + "' is registered in the cluster "
          + "(csi-agent cluster plugins lists what is)");
    }
    List<String> what = new ArrayList<>();
    for (CatalogEntry e : controllers) {
      if (e.healthy() && e.controllerCapabilities().contains("CREATE_DELETE_VOLUME")) {
        return Optional.empty();
      }
      what.add("node " + e.nodeId() + ": " + (!e.healthy() ? "unhealthy" + (e.healthMessage().isEmpty() ? ""
          : " (" + e.healthMessage() + ")") : "no CREATE_DELETE_VOLUME"));
    }
    return Optional.of("no healthy controller of plugin " + plugin + " with CREATE_DELETE_VOLUME in the cluster ("
        + String.join("; ", what) + "): nothing was asked");
  }

  /** Reads the request until it is done, failed or the wait is over. */
  static Optional<ClusterVolumeRequest> await(ClusterVolumes v, ClusterVolumeRequest.Kind kind, String plugin,
      String name, Duration wait, java.util.function.Predicate<Optional<ClusterVolumeRequest>> over) {
    long end = System.nanoTime() + wait.toNanos();
    while (true) {
      Optional<ClusterVolumeRequest> r = v.request(kind, plugin, name);
      if (over.test(r) || System.nanoTime() - end >= 0) {
        return r;
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
    String kind = r.kind().name().toLowerCase(java.util.Locale.ROOT);
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
