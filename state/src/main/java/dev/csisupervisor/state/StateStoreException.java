package dev.csisupervisor.state;

/** A state store could not open, read or commit. When thrown by a mutating call, nothing changed. */
public class StateStoreException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StateStoreException(String message) {
    super(message);
  }

  public StateStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
