package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The call did not run to completion because of this side: the client was closed (before or
 * during the call), or the thread waiting in a blocking call was interrupted (its interrupt flag
 * is set again).
 */
public final class CallCancelledException extends CsiException {
  private static final long serialVersionUID = 1L;

  /** @param reason e.g. "the client is closed", "the calling thread was interrupted" */
  public CallCancelledException(Path socket, String method, String reason) {
    super(CsiErrorKind.CANCELLED, socket, method,
        callOn(method, socket) + " was cancelled: " + Objects.requireNonNull(reason, "reason"));
  }
}
