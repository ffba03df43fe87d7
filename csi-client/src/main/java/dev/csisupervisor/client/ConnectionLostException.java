package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The gRPC connection was up and the request sent, then the connection broke before the answer
 * came (typically the plugin crashed or was stopped during the call).
 */
public final class ConnectionLostException extends CsiException {
  private static final long serialVersionUID = 1L;

  /** @param detail what gRPC reported, e.g. "UNAVAILABLE: Network closed for unknown reason"; may be null */
  public ConnectionLostException(Path socket, String method, String detail) {
    super(CsiErrorKind.CONNECTION_LOST, socket, method, withDetail("the connection to CSI plugin socket " + socket
        + " broke during " + Objects.requireNonNull(method, "method"), detail));
  }
}
