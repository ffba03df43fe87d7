package dev.csisupervisor.supervisor;

import static java.util.Objects.requireNonNull;

import java.time.Instant;

/**
 * A task event, as a scheduler shows it in its task history.
 *
 * @param type    a short, stable kind, one of the constants below
 * @param message what happened, with the error that caused it where there is one
 * @param time    when it happened, read from the supervisor's clock
 */
public record TaskEvent(String type, String message, Instant time) {
  /** The plugin answered Probe with ready=true after having been not ready (or never probed). */
  public static final String PLUGIN_HEALTHY = "Plugin became healthy";
  /** The plugin stopped answering Probe, answered an error, or reported not ready. */
  public static final String PLUGIN_UNHEALTHY = "Plugin became unhealthy";
  /** The plugin was registered (or its registration updated after a re-fingerprint). */
  public static final String PLUGIN_REGISTERED = "Plugin registered";
  /** The plugin could not be registered (fingerprint or registry failure). */
  public static final String PLUGIN_FAILED = "Plugin failed";
  /**
   * The supervisor asked the task runner to restart the task: the plugin stayed unhealthy (not
   * ready after a start, or failing probes once registered) for its health timeout.
   */
  public static final String RESTART_REQUESTED = "Restart requested";
  /**
   * A monolith registered only the half it really serves; the message says which half was
   * skipped and why (no CONTROLLER_SERVICE capability, or a Node service answering UNIMPLEMENTED).
   */
  public static final String PLUGIN_PARTIAL = "Plugin partially registered";
  /**
   * A different driver (another GetPluginInfo name) now answers on the plugin's socket; the
   * message names the old and new driver and version. The registration is then UPDATED.
   */
  public static final String DRIVER_REPLACED = "Driver replaced";

  public TaskEvent {
    requireNonNull(type, "type");
    requireNonNull(message, "message");
    requireNonNull(time, "time");
  }
}
