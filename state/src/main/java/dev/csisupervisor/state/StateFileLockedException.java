package dev.csisupervisor.state;

import java.nio.file.Path;

/** The state file is held by another process (or by another open store in this one). */
public final class StateFileLockedException extends StateStoreException {
  private static final long serialVersionUID = 1L;
  private final transient Path file;

  public StateFileLockedException(Path file) {
    super("state file " + file + " is locked by another process (or another open store in this process)");
    this.file = file;
  }

  /** The state file that is locked. */
  public Path file() {
    return file;
  }
}
