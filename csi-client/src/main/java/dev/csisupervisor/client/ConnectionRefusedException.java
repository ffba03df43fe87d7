package dev.csisupervisor.client;

import java.nio.file.Path;

/**
 * The socket file exists but nothing accepts connections on it: a stale socket left by a plugin
 * that died, or a plugin that has bound but not yet started listening. Reported at once; the
 * client does not wait and retry inside gRPC, the caller decides when to try again.
 */
public final class ConnectionRefusedException extends CsiException {
  private static final long serialVersionUID = 1L;

  public ConnectionRefusedException(Path socket) {
    super(CsiErrorKind.CONNECTION_REFUSED, socket, null, "nothing is accepting connections on CSI plugin socket "
        + socket + " (connection refused): the socket file is stale or the plugin is not listening yet");
  }
}
