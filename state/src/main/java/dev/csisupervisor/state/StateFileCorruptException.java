package dev.csisupervisor.state;

import java.nio.file.Path;

/**
 * Strict mode found a state file (a checkpoint, a journal segment, or an earlier version's file) it cannot read
 * back. Every file was left where it was, untouched, for an operator to inspect.
 */
public final class StateFileCorruptException extends StateStoreException {
  private static final long serialVersionUID = 1L;
  private final transient Path file;

  public StateFileCorruptException(Path file, Throwable cause) {
    super("state file " + file + " is corrupt and strict mode is on (files left untouched): "
        + (cause.getMessage() != null ? cause.getMessage() : StateDirectory.describe(cause)), cause);
    this.file = file;
  }

  /** The corrupt state file. */
  public Path file() {
    return file;
  }
}
