package dev.csisupervisor.catalog;

/**
 * A cluster volume change that the volume's state does not allow: registering an id already registered with
 * other content, deregistering a volume that is still claimed or attached. The message says which and why.
 */
public final class VolumeStateException extends Exception {
  private static final long serialVersionUID = 1L;

  public VolumeStateException(String message) {
    super(message);
  }
}
