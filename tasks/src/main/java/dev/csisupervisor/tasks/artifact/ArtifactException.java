package dev.csisupervisor.tasks.artifact;

import static java.util.Objects.requireNonNull;

import java.util.Locale;

/**
 * A plugin artifact could not be made ready. The message names the URL or the archive entry and
 * what is wrong; {@link #reason()} classifies it (for metrics and for the retry decision).
 */
public final class ArtifactException extends Exception {
  private static final long serialVersionUID = 1L;

  /** What went wrong. */
  public enum Reason {
    /** The file's SHA-256 is not the configured one. Never retried: nothing of it is used. */
    CHECKSUM,
    /** The server answered with an error status. */
    HTTP,
    /** No complete answer within the timeout. */
    TIMEOUT,
    /** The transfer or a local file operation failed (connection refused, reset, disk full). */
    IO,
    /** The archive is truncated or corrupt, or holds an entry that would escape its directory. */
    ARCHIVE,
    /** The configured entry is not in the artifact. */
    ENTRY_MISSING,
    /** The entry is there but is not an executable file. */
    ENTRY_NOT_EXECUTABLE;

    /** The metric label: {@code checksum}, {@code http}, ... */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final Reason reason;
  private final boolean retryable;

  public ArtifactException(Reason reason, String message, boolean retryable) {
    super(message);
    this.reason = requireNonNull(reason, "reason");
    this.retryable = retryable;
  }

  public ArtifactException(Reason reason, String message, boolean retryable, Throwable cause) {
    super(message, cause);
    this.reason = requireNonNull(reason, "reason");
    this.retryable = retryable;
  }

  public Reason reason() {
    return reason;
  }

  /** Whether another download attempt may succeed (a transient network or server failure). */
  public boolean retryable() {
    return retryable;
  }
}
