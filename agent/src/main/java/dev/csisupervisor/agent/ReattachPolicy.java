package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.tasks.process.LaunchedProcess;
import dev.csisupervisor.tasks.process.ProcessRecord;
import dev.csisupervisor.tasks.process.ProcessRecords;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What becomes of the plugin processes a previous run of the agent left running (recorded in
 * {@code <data_dir>/processes.json}), whatever {@code leave_running} said then: a process of a
 * plugin still configured with the same command line and socket is re-attached, so that no
 * second copy is launched; every other live one is stopped (SIGTERM, then SIGKILL after the
 * grace period).
 *
 * <p>Old processes are all signalled first, then waited for together ({@link #awaitStopped}):
 * start-up takes one grace period, not one per process. Used once, at start, by one thread.
 */
final class ReattachPolicy {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private final AgentConfig config;
  private final ProcessRecords records;
  private final ArtifactStore artifacts;
  private final ScheduledExecutorService scheduler;
  private final List<CompletableFuture<?>> terminating = new ArrayList<>();

  ReattachPolicy(AgentConfig config, ProcessRecords records, ArtifactStore artifacts,
      ScheduledExecutorService scheduler) {
    this.config = requireNonNull(config, "config");
    this.records = requireNonNull(records, "records");
    this.artifacts = requireNonNull(artifacts, "artifacts");
    this.scheduler = requireNonNull(scheduler, "scheduler");
  }

  /** Stops the live processes of plugins no longer configured (or no longer launched). */
  void stopUnconfigured() {
    for (ProcessRecord rec : records.all().values()) {
      if (config.plugin(rec.id()).filter(PluginSpec::launched).isPresent()) {
        continue;
      }
      LaunchedProcess.reattach(rec).ifPresent(p -> {
        log.info("plugin={} is no longer configured: stopping its process pid {}", rec.id(),
            p.pid());
        terminating.add(p.terminate(config.shutdownGrace(), scheduler));
      });
      try {
        records.remove(rec.id());
      } catch (IOException e) {
        log.warn("cannot remove the process record of {}: {}", rec.id(), e.toString());
      }
    }
  }

  /**
   * The live process of a previous run for this task, if it is the same plugin; null if there
   * is none, or if it runs another command line or socket (it is stopped then).
   */
  LaunchedProcess reattachable(PluginTask task) {
    PluginSpec spec = task.spec();
    if (!spec.launched()) {
      return null;
    }
    Optional<ProcessRecord> rec = records.get(spec.id());
    if (rec.isEmpty()) {
      return null;
    }
    Optional<LaunchedProcess> p = LaunchedProcess.reattach(rec.get());
    if (p.isEmpty()) {
      log.info("plugin={}: its process from the previous run (pid {}) is gone; launching it",
          spec.id(), rec.get().pid());
      return null;
    }
    List<String> want = LaunchCommand.of(spec, spec.artifact() == null ? null
        : artifacts.revisionDir(spec.id(), spec.artifact()));
    String socket = task.hook().socketPath().toString();
    if (!rec.get().commandLine().equals(want) || !rec.get().socket().equals(socket)) {
      log.info("plugin={}: its config changed since pid {} was launched; stopping that process",
          spec.id(), p.get().pid());
      terminating.add(p.get().terminate(config.shutdownGrace(), scheduler));
      return null;
    }
    return p.get();
  }

  /** Waits (at most the grace period and 5 s) for the processes being stopped to exit. */
  void awaitStopped() {
    try {
      CompletableFuture.allOf(terminating.toArray(CompletableFuture[]::new))
          .get(config.shutdownGrace().toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
      log.warn("process did not stop in time: {}", e.toString());
    }
  }
}
