package dev.csisupervisor.supervisor;

import dev.csisupervisor.registry.PluginType;
import java.nio.file.Path;
import java.util.Set;

/**
 * Supervises the CSI plugin of one task: prestart makes its socket directory, poststart starts
 * supervision, stop ends it and deregisters. Obtained from {@link CsiPluginSupervisor#hook}.
 *
 * <p>Thread-safe. Supervision runs on the supervisor's shared scheduler; task events and
 * lifecycle calls are made from its threads, in transition order.
 */
public interface CsiPluginSupervisorHook extends PrestartHook, PoststartHook, StopHook {

  /** Where supervision is; it only moves forward, and {@link Phase#STOPPED} is final. */
  enum Phase {
    /** Created; poststart has not run. */
    NEW,
    /** Step 1: probing until the plugin reports ready. */
    AWAITING_READY,
    /** Step 3: ready; fingerprinting and registering. */
    REGISTERING,
    /** Step 4: registered; probing every interval and reporting health changes. */
    REGISTERED,
    /** Stopped: deregistered, channel closed. */
    STOPPED
  }

  Phase phase();

  /**
   * Ends supervision without deregistering: the channel is closed, no more probes or events, and
   * the plugin's registrations stay in the registry (and its state file). For an agent that shuts
   * down leaving its plugins running, whose next start re-runs the hooks and confirms them.
   * Idempotent; {@link #stop} after it changes nothing.
   */
  void detach(String reason);

  /**
   * The task runner is stopping the plugin's process to replace it (a new config, a new
   * build): its registrations are marked unhealthy now, with {@code reason}, instead of staying
   * healthy until a probe fails. The replacement's first ready probe re-registers them healthy.
   * No-op unless registered and healthy.
   */
  void replacingProcess(String reason);

  CsiPluginConfig config();

  TaskContext task();

  /** The plugin's socket on the node. */
  Path socketPath();

  /** The registry types this hook currently holds a registration for. */
  Set<PluginType> registeredTypes();

  /** Whether the last probe found the plugin healthy (false before the first ready probe). */
  boolean healthy();
}
