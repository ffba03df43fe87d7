package dev.csisupervisor.agent;

import dev.csisupervisor.agent.config.AgentConfig;
import dev.csisupervisor.agent.config.ConfigLoader;
import dev.csisupervisor.agent.config.PluginSpec;
import dev.csisupervisor.agent.metrics.AgentMetrics;
import dev.csisupervisor.agent.metrics.TimedStateStore;
import dev.csisupervisor.registry.PluginEvent;
import dev.csisupervisor.registry.PluginRegistry;
import dev.csisupervisor.registry.PluginType;
import dev.csisupervisor.supervisor.PluginKinds;
import dev.csisupervisor.state.GroupCommitStore;
import dev.csisupervisor.state.JournalStateStore;
import dev.csisupervisor.state.StateFileLockedException;
import dev.csisupervisor.state.StateStore;
import dev.csisupervisor.state.StateStoreException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The registry across agent restarts: restored from {@code <data_dir>/state/} at start, then
 * reconciled against the plugins that are configured (or discovered) now.
 */
final class RegistryRestore {
  // The agent's log lines keep the one logger name operators filter on.
  private static final Logger log = LoggerFactory.getLogger(Agent.class);

  private RegistryRestore() {}

  /**
   * Opens the state (checkpoint + journal), timed for the metrics, behind the node's one group commit: the registry
   * and the volume manager write through it and share every fsync.
   */
  static StateStore openStore(AgentConfig config, AgentMetrics metrics) throws AgentException {
    try {
      return GroupCommitStore.over(new TimedStateStore(JournalStateStore.open(config.dataDir()), metrics));
    } catch (StateFileLockedException e) {
      throw new AgentException("the state in " + config.dataDir() + " is locked by another"
          + " process: is another csi-agent running with this data_dir? (" + e.getMessage() + ")",
          e);
    } catch (StateStoreException e) {
      throw new AgentException("cannot open the state in " + config.dataDir() + ": "
          + e.getMessage(), e);
    }
  }

  /** The registry with the previous run's registrations, unconfirmed until their plugins return. */
  static PluginRegistry restore(AgentConfig config, StateStore store, Clock clock,
      ScheduledExecutorService scheduler) {
    PluginRegistry registry = PluginRegistry.builder().stateStore(store).clock(clock)
        .restoreGracePeriod(restoreGrace(config), scheduler)
        .build();
    for (var problem : registry.restoreProblems()) {
      log.error("state record {} could not be restored: {}", problem.key(), problem.reason());
    }
    int restored = 0;
    for (PluginType t : PluginType.values()) {
      restored += registry.listAll(t).size();
    }
    log.info("registry restored {} registration(s) from {}", restored, config.dataDir());
    return registry;
  }

  private static Duration restoreGrace(AgentConfig config) {
    // A restored entry of a configured plugin that has not come back by the time its health
    // timeout would have restarted it is stale.
    Duration max = Duration.ofSeconds(30);
    if (config.discoveryProbe().healthTimeout().compareTo(max) > 0) {
      max = config.discoveryProbe().healthTimeout();
    }
    for (PluginSpec p : config.plugins()) {
      if (p.probe().healthTimeout().compareTo(max) > 0) {
        max = p.probe().healthTimeout();
      }
    }
    return max.plusSeconds(5);
  }

  /**
   * Drops what the previous run registered for plugins that are gone: every alloc id not in
   * {@code live}, and configured plugins' registrations under a type they no longer serve.
   */
  static void reconcile(AgentConfig config, PluginRegistry registry, Set<String> live) {
    List<PluginEvent> dropped = new ArrayList<>(registry.reconcile(live));
    dropped.addAll(dropTypesNoLongerServed(config, registry));
    if (!dropped.isEmpty()) {
      log.info("reconciled away {} registration(s) of plugins no longer configured",
          dropped.size());
    }
  }

  /**
   * Restored registrations of a configured plugin under a type it no longer has (a monolith
   * that is now a node plugin): its alloc id is still live, so reconcile keeps them; they go now,
   * not when the restore grace period ends.
   */
  private static List<PluginEvent> dropTypesNoLongerServed(AgentConfig config,
      PluginRegistry registry) {
    List<PluginEvent> dropped = new ArrayList<>();
    for (PluginSpec spec : config.plugins()) {
      Set<PluginType> serves = PluginKinds.registryTypes(spec.type());
      for (PluginType t : PluginType.values()) {
        if (serves.contains(t)) {
          continue;
        }
        for (var info : registry.listAll(t)) {
          if (info.name().equals(spec.id()) && info.allocId().equals(spec.allocId())) {
            try {
              registry.deregister(t, info.name(), info.allocId()).ifPresent(dropped::add);
              log.info("plugin={}: dropped its restored {} registration: it is now a {} plugin",
                  spec.id(), t.label(), spec.type().dirName());
            } catch (RuntimeException e) {
              log.warn("plugin={}: cannot drop its restored {} registration: {}", spec.id(),
                  t.label(), e.toString());
            }
          }
        }
      }
    }
    return dropped;
  }
}
