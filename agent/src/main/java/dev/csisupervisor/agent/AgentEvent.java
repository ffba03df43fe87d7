package dev.csisupervisor.agent;

import static java.util.Objects.requireNonNull;

import java.time.Instant;

/**
 * Something that happened to one of the agent's plugin tasks: its process (started, exited,
 * restarting, ...) or its supervision (the supervisor hook's task events: healthy, unhealthy,
 * registered, ...).
 *
 * @param time     when it happened
 * @param pluginId the plugin's id from the config
 * @param type     a short stable kind: one of the constants here, or a
 *                 {@link dev.csisupervisor.supervisor.TaskEvent} type
 * @param message  what happened, for people
 */
public record AgentEvent(Instant time, String pluginId, String type, String message) {
  public static final String PROCESS_STARTED = "Process started";
  public static final String PROCESS_REATTACHED = "Process re-attached";
  public static final String PROCESS_EXITED = "Process exited";
  public static final String START_FAILED = "Process failed to start";
  public static final String RESTART_SCHEDULED = "Restart scheduled";
  public static final String RESTART_REQUESTED = "Restart requested";
  public static final String NOT_RESTARTING = "Not restarting";
  public static final String PROCESS_STOPPED = "Process stopped";
  public static final String SUPERVISING = "Supervising";
  public static final String ARTIFACT_FETCHING = "Downloading artifact";
  public static final String ARTIFACT_READY = "Artifact ready";
  public static final String ARTIFACT_FAILED = "Artifact failed";
  public static final String RESTARTING_FOR_UPDATE = "Restarting for new config";
  public static final String LIMIT_EXCEEDED = "Resource limit exceeded";

  public AgentEvent {
    requireNonNull(time, "time");
    requireNonNull(pluginId, "pluginId");
    requireNonNull(type, "type");
    requireNonNull(message, "message");
  }
}
