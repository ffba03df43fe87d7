package dev.csisupervisor.client;

import dev.csisupervisor.common.Durations;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * The call got no answer within its deadline: a hung plugin, or a server that accepted the
 * connection but never completed the HTTP/2 handshake ({@link #connected()} tells which).
 */
public final class CsiDeadlineExceededException extends CsiException {
  private static final long serialVersionUID = 1L;

  private final Duration timeout;
  private final boolean connected;

  /**
   * @param timeout the deadline the call had
   * @param connected whether the gRPC connection was up (the request was sent) when time ran out
   */
  public CsiDeadlineExceededException(Path socket, String method, Duration timeout, boolean connected) {
    super(CsiErrorKind.DEADLINE_EXCEEDED, socket, method, message(socket, method, timeout, connected));
    this.timeout = timeout;
    this.connected = connected;
  }

  private static String message(Path socket, String method, Duration timeout, boolean connected) {
    String base = callOn(method, socket) + " got no answer within "
        + Durations.format(Objects.requireNonNull(timeout, "timeout")) + " (deadline exceeded)";
    return connected
        ? base
        : base + " while still connecting: the server did not complete the HTTP/2 handshake in time";
  }

  /** The deadline the call had. */
  public Duration timeout() {
    return timeout;
  }

  /** Whether the connection was up and the request sent (false: stuck in the handshake). */
  public boolean connected() {
    return connected;
  }
}
