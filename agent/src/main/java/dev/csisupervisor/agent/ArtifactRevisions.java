package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.tasks.artifact.Revision;
import dev.csisupervisor.tasks.artifact.ArtifactSpec;
import java.nio.file.Path;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One plugin task's artifact revisions: the revision to launch, the one its process runs, the
 * fetch in flight, the last fetch error, and when the older revisions may go (once a probe sent
 * after the launch finds the process ready).
 *
 * <p>Guarded by the task's lock: every method but {@link #pruneAllBut} is called holding it, and
 * a fetch's result is handed back on the scheduler, holding it.
 */
final class ArtifactRevisions {
  private static final Logger log = LoggerFactory.getLogger(PluginTask.class);

  /** A fetch's result: the revision, or the error; {@code downloaded} if it was not installed. */
  @FunctionalInterface
  interface Fetched {
    void accept(Revision revision, Throwable error, boolean downloaded);
  }

  private final String pluginId;
  private final ArtifactStore artifacts;
  private final ScheduledExecutorService scheduler;
  private final Executor io;
  private final Object lock;

  /** The revision to launch; the current one once fetched. Null without an artifact. */
  private Revision wanted;
  /** The revision the current process runs. */
  private Revision running;
  /** Bumped by every fetch; a fetch result of an older generation is ignored. */
  private long generation;
  private String error;
  /** When the current process was launched, and whether a ready probe has been seen since. */
  private long launchedNanos;
  private boolean confirmed;

  ArtifactRevisions(String pluginId, ArtifactStore artifacts, ScheduledExecutorService scheduler,
      Executor io, Object lock) {
    this.pluginId = requireNonNull(pluginId, "pluginId");
    this.artifacts = requireNonNull(artifacts, "artifacts");
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.io = requireNonNull(io, "io");
    this.lock = requireNonNull(lock, "lock");
  }

  /** Whether the revision to launch is {@code a}'s. */
  boolean isCurrent(ArtifactSpec a) {
    return wanted != null && a != null && wanted.sha256().equals(a.sha256())
        && wanted.executable().equals(
            artifacts.revisionDir(pluginId, a).resolve(a.entry()).normalize());
  }

  /** Where to launch from: the revision's directory; null without an artifact. */
  Path launchDir() {
    return wanted == null ? null : wanted.dir();
  }

  /**
   * Gets {@code a}'s revision: at once if it is installed, else downloaded ({@code downloading}
   * is told first). {@code fetched} is called holding the lock, unless another fetch or
   * {@link #cancelFetch} came since.
   */
  void fetch(ArtifactSpec a, Consumer<String> downloading, Fetched fetched) {
    long g = ++generation;
    var installed = artifacts.installed(pluginId, a);
    if (installed.isPresent()) {
      fetched.accept(installed.get(), null, false);
      return;
    }
    downloading.accept("downloading " + a.displayUrl() + " (revision " + pluginId + "_"
        + a.revision() + ")");
    artifacts.fetch(pluginId, a).whenCompleteAsync((rev, e) -> {
      synchronized (lock) {
        if (g == generation) {
          fetched.accept(rev, e, true);
        }
      }
    }, scheduler);
  }

  /** A fetch in flight is no longer wanted: its result will be ignored. */
  void cancelFetch() {
    generation++;
  }

  /** A fetch made {@code rev} ready: it is the revision to launch. */
  void ready(Revision rev) {
    error = null;
    wanted = rev;
  }

  /** A fetch failed: {@code message} is shown in the task's status until one succeeds. */
  void failed(String message) {
    error = message;
  }

  /** The plugin no longer has an artifact. */
  void dropped() {
    wanted = null;
  }

  /** A process of an earlier agent run was re-attached: it runs {@code a}'s installed revision. */
  void reattached(ArtifactSpec a) {
    wanted = artifacts.installed(pluginId, a).orElse(null);
    running = wanted;
  }

  /** A process was launched from {@link #launchDir}. */
  void launched() {
    running = wanted;
  }

  /** A process was launched or re-attached now: no probe has confirmed it yet. */
  void processStarted() {
    launchedNanos = System.nanoTime();
    confirmed = false;
  }

  /**
   * Whether a ready probe sent at {@code sentNanos} is the first to confirm the current process:
   * its revision is proven then, and the older ones may go.
   */
  boolean confirmedBy(long sentNanos) {
    if (confirmed || sentNanos - launchedNanos <= 0) {
      return false;
    }
    confirmed = true;
    return true;
  }

  /** The revision the current process runs; null if it runs a command. */
  Revision running() {
    return running;
  }

  /** The last fetch's error; null if it succeeded. */
  String error() {
    return error;
  }

  /** Removes every installed revision but {@code keep} (all of them if null), on the io threads. */
  void pruneAllBut(Revision keep) {
    try {
      io.execute(() -> artifacts.prune(pluginId, keep));
    } catch (RejectedExecutionException e) {
      log.debug("plugin={}: agent stopping, old revisions kept", pluginId);
    }
  }
}
