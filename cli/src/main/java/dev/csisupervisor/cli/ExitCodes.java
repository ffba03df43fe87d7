package dev.csisupervisor.cli;

/** What {@code csi-agent} exits with, whichever command ran. */
public final class ExitCodes {
  public static final int OK = 0;
  /** The command could not do its job: the agent is unreachable or refused, a file is unreadable. */
  public static final int FAILURE = 1;
  /** The command line or a config is wrong: nothing was done. */
  public static final int USAGE = 2;

  private ExitCodes() {}
}
