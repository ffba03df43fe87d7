package dev.csisupervisor.agent;

/** The agent could not start; the message says what and where. */
public final class AgentException extends Exception {
  private static final long serialVersionUID = 1L;

  private final boolean configError;

  public AgentException(String message) {
    this(message, null, false);
  }

  public AgentException(String message, Throwable cause) {
    this(message, cause, false);
  }

  public AgentException(String message, Throwable cause, boolean configError) {
    super(message, cause);
    this.configError = configError;
  }

  /** Whether the config is wrong (exit 2) rather than the machine (exit 1). */
  public boolean configError() {
    return configError;
  }
}
