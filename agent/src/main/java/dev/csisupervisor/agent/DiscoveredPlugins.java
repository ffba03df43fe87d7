package dev.csisupervisor.agent;

import dev.csisupervisor.common.FileWatcher;
import static dev.csisupervisor.agent.Agent.DISCOVERED_ALLOC_PREFIX;
import static java.util.Objects.requireNonNull;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.tasks.resources.ResourceLimits;
import dev.csisupervisor.agent.discovery.CsiSocketClassifier;
import dev.csisupervisor.agent.discovery.DiscoveryDir;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.client.PluginKind;
import dev.csisupervisor.supervisor.CsiPluginConfig;
import dev.csisupervisor.supervisor.CsiPluginSupervisor;
import dev.csisupervisor.supervisor.CsiPluginSupervisorHook;
import dev.csisupervisor.supervisor.PoststartRequest;
import dev.csisupervisor.supervisor.StopRequest;
import dev.csisupervisor.supervisor.TaskContext;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The plugins of the {@code discovery_dir}: every CSI socket that appears there
 * ({@link DiscoveryDir}) is supervised as an external plugin with the {@code defaults} probe
 * settings, under alloc id {@code discovered-<id>}. Ids of configured plugins are reserved: a
 * socket named like one is ignored.
 *
 * <p>Thread-safe: the discovery directory calls in on the scheduler; status is read from any
 * thread.
 */
final class DiscoveredPlugins {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private final AgentConfig config;
  private final CsiPluginSupervisor supervisor;
  private final FileWatcher watcher;
  private final ScheduledExecutorService scheduler;
  private final Executor io;
  private final PluginEvents events;
  private final AgentMetrics metrics;
  private final Clock clock;
  private final Map<String, CsiPluginSupervisorHook> hooks = new ConcurrentHashMap<>();
  private volatile DiscoveryDir discovery;

  /** @param services the tasks' scheduler, io executor, metrics and clock (discovered plugins are tasks too) */
  DiscoveredPlugins(AgentConfig config, CsiPluginSupervisor supervisor, FileWatcher watcher, TaskServices services,
      PluginEvents events) {
    this.config = requireNonNull(config, "config");
    this.supervisor = requireNonNull(supervisor, "supervisor");
    this.watcher = requireNonNull(watcher, "watcher");
    this.scheduler = services.scheduler();
    this.io = services.io();
    this.events = requireNonNull(events, "events");
    this.metrics = services.metrics();
    this.clock = services.clock();
  }

  /**
   * Starts watching the discovery directory.
   *
   * @param reserved the ids of configured plugins, which a discovered socket may not take
   * @return the alloc ids of the sockets there now, for reconcile
   */
  Set<String> start(Predicate<String> reserved) throws AgentException {
    DiscoveryDir d = DiscoveryDir.builder(config.discoveryDir())
        .scheduler(scheduler)
        .watcher(watcher)
        .classifier(new CsiSocketClassifier(config.discoveryProbe().probeTimeout(), io))
        .supervision(this::supervise)
        .reserved(reserved)
        .listener((id, type, message) -> {
          log.info("plugin={} event=\"{}\": {}", id, type, message);
          events.emit(new AgentEvent(clock.instant(), id, type, message));
        })
        .backoff(config.discoveryProbe().initialBackoff().multipliedBy(10),
            Duration.ofSeconds(30))
        .build();
    discovery = d;
    metrics.watchDiscovery(() -> {
      Map<String, Long> byState = new TreeMap<>();
      for (DiscoveryDir.State st : DiscoveryDir.State.values()) {
        byState.put(st.name().toLowerCase(Locale.ROOT), 0L);
      }
      for (DiscoveryDir.Entry e : d.entries()) {
        byState.merge(e.state().name().toLowerCase(Locale.ROOT), 1L, Long::sum);
      }
      return byState;
    });
    try {
      d.start();
    } catch (IOException e) {
      throw new AgentException("discovery_dir " + config.discoveryDir() + " cannot be watched: "
          + e, e);
    }
    return d.candidateIds().stream().map(id -> DISCOVERED_ALLOC_PREFIX + id)
        .collect(Collectors.toSet());
  }

  /** Starts supervising a socket found in the discovery directory. Runs on the scheduler. */
  private DiscoveryDir.Handle supervise(String id, PluginKind kind, Path socket) {
    CsiPluginConfig cfg = config.discoveryProbe().supervisorConfig(id, kind, socket);
    String allocId = DISCOVERED_ALLOC_PREFIX + id;
    CsiPluginSupervisorHook hook = supervisor.hook(new TaskContext(allocId, id), cfg,
        event -> events.taskEvent(id, kind, allocId, event),
        reason -> log.warn("plugin={}: restart requested ({}), but a discovered plugin is not"
            + " the agent's to restart", id, reason));
    CsiPluginSupervisorHook previous = hooks.put(id, hook);
    if (previous != null) {
      previous.stop(StopRequest.because("replaced by a new socket"));
    }
    hook.poststart(PoststartRequest.of());
    return new DiscoveryDir.Handle() {
      @Override
      public void stop(String reason) {
        hooks.remove(id, hook);
        hook.stop(StopRequest.because(reason));
      }

      @Override
      public void detach(String reason) {
        hooks.remove(id, hook);
        hook.detach(reason);
      }
    };
  }

  /** Whether a discovered plugin has this id. */
  boolean has(String id) {
    return hooks.containsKey(id);
  }

  /** The discovered plugins' tasks, by id. */
  List<TaskStatus> statuses() {
    return new TreeMap<>(hooks).entrySet().stream()
        .map(e -> status(e.getKey(), e.getValue())).toList();
  }

  Optional<TaskStatus> status(String id) {
    CsiPluginSupervisorHook h = hooks.get(id);
    return h == null ? Optional.empty() : Optional.of(status(id, h));
  }

  private static TaskStatus status(String id, CsiPluginSupervisorHook hook) {
    return new TaskStatus(id, hook.config().type(), hook.task().allocId(), false,
        TaskStatus.ProcessState.EXTERNAL, 0, 0, false, hook.phase(), hook.healthy(),
        hook.socketPath(), null, true, null, null, ResourceLimits.NONE, 0, List.of(), null,
        null);
  }

  /** The discovery directory's sockets; none if it is not watched. */
  List<DiscoveryDir.Entry> entries() {
    DiscoveryDir d = discovery;
    return d == null ? List.of() : d.entries();
  }

  /** Stops watching; the plugins' registrations are dropped, or kept with {@code leaveRunning}. */
  void close(boolean leaveRunning) {
    DiscoveryDir d = discovery;
    if (d != null) {
      d.close(leaveRunning);
    }
  }
}
