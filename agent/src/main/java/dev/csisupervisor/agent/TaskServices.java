package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import dev.csisupervisor.tasks.artifact.ArtifactStore;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.tasks.process.ProcessRecords;
import dev.csisupervisor.tasks.resources.ResourceMonitor;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;

/**
 * What the agent's plugin tasks share: one instance per agent, handed to every
 * {@link PluginTask}.
 *
 * @param scheduler where exits, restarts and timers run (never blocked)
 * @param io where blocking work runs (pruning old artifact revisions)
 * @param clock the time of events and of the restart policy
 * @param records the record of launched processes, for re-attaching after an agent restart
 * @param grace how long a stopped process has between SIGTERM and SIGKILL
 * @param events where the tasks' {@link AgentEvent}s go
 * @param metrics restarts, limit restarts, artifact failures
 * @param artifacts fetches and installs plugins' artifacts
 * @param monitor samples launched processes' resources; null if sampling is off
 */
record TaskServices(ScheduledExecutorService scheduler, Executor io, Clock clock,
    ProcessRecords records, Duration grace, Consumer<AgentEvent> events, AgentMetrics metrics,
    ArtifactStore artifacts, ResourceMonitor monitor) {
  TaskServices {
    requireNonNull(scheduler, "scheduler");
    requireNonNull(io, "io");
    requireNonNull(clock, "clock");
    requireNonNull(records, "records");
    requireNonNull(grace, "grace");
    requireNonNull(events, "events");
    requireNonNull(metrics, "metrics");
    requireNonNull(artifacts, "artifacts");
  }
}
