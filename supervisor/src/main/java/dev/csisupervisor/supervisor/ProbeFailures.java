package dev.csisupervisor.supervisor;

import dev.csisupervisor.common.Futures;
import dev.csisupervisor.client.CsiException;
import java.util.Optional;

/** How a failed probe or fingerprint reads: its message for people, and its kind for the hook's decisions. */
final class ProbeFailures {
  /** Nothing serves the socket: missing, refused, or the connection lost, whatever the detail. */
  static final String NOTHING_SERVING = "NOTHING_SERVING";

  private ProbeFailures() {}

  /**
   * The kind of a failed probe, coarse enough that one ongoing problem keeps one kind: nothing
   * serving the socket (missing, refused, connection lost) is one kind, whatever the detail.
   */
  static String kind(boolean ok, Throwable error) {
    if (ok) {
      return "";
    }
    if (error == null) {
      return "NOT_READY";
    }
    Optional<CsiException> csi = CsiException.find(error);
    if (csi.isEmpty()) {
      return Futures.unwrap(error).getClass().getName();
    }
    return switch (csi.get().kind()) {
      case SOCKET_NOT_FOUND, CONNECTION_REFUSED, CONNECTION_LOST -> NOTHING_SERVING;
      default -> csi.get().kind().name();
    };
  }

  /** The failure's own message, out of the wrappers futures put around it (its class name if it has none). */
  static String describe(Throwable error) {
    Throwable t = Futures.unwrap(error);
    String m = t.getMessage();
    return m == null || m.isBlank() ? t.getClass().getSimpleName() : m;
  }
}
