package dev.csisupervisor.client;

import java.util.Optional;

/**
 * What a failed CSI call's outcome says, written once for every caller (the node volume manager and the cluster's
 * controller agent): whether the call's effect is <em>uncertain</em> (the spec's transient codes, no answer at all,
 * a plugin restarting), so the same call is sent again, or final.
 */
public final class CsiOutcome {
  private CsiOutcome() {}

  /**
   * Whether the call may or may not have had its effect and is to be sent again: the spec's UNAVAILABLE,
   * DEADLINE_EXCEEDED and ABORTED ("operation pending for volume") from the plugin, or no answer at all (our
   * deadline, a lost connection, a plugin not listening now). Anything that is not a {@link CsiException} (a timeout
   * of the caller's own wait, say) is uncertain too: nothing says the plugin did not act.
   */
  public static boolean uncertain(Throwable failure) {
    Optional<CsiException> e = CsiException.find(failure);
    if (e.isEmpty()) {
      return true;
    }
    if (e.get() instanceof CsiStatusException s) {
      return s.code() == StatusCode.UNAVAILABLE || s.code() == StatusCode.DEADLINE_EXCEEDED
          || s.code() == StatusCode.ABORTED;
    }
    CsiErrorKind k = e.get().kind();
    return k == CsiErrorKind.DEADLINE_EXCEEDED || k == CsiErrorKind.CONNECTION_LOST
        || k == CsiErrorKind.CONNECTION_REFUSED || k == CsiErrorKind.SOCKET_NOT_FOUND;
  }

  /** The status code the plugin answered, if it answered one. */
  public static Optional<StatusCode> code(Throwable failure) {
    return CsiException.find(failure).filter(x -> x instanceof CsiStatusException)
        .map(x -> ((CsiStatusException) x).code());
  }

  /** Whether the plugin answered NOT_FOUND (for an undoing call: already done). */
  public static boolean notFound(Throwable failure) {
    return code(failure).equals(Optional.of(StatusCode.NOT_FOUND));
  }
}
