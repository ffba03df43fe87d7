package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Something accepts connections on the socket, but it is not a CSI plugin: it does not speak
 * HTTP/2, closes the connection during the handshake, or is a gRPC server without the CSI
 * {@code Identity} service.
 */
public final class NotCsiServerException extends CsiException {
  private static final long serialVersionUID = 1L;

  /** @param detail what the peer did, e.g. "it does not speak HTTP/2; its first bytes were \"HTTP/\"" */
  public NotCsiServerException(Path socket, String method, String detail) {
    super(CsiErrorKind.NOT_CSI_SERVER, socket, method,
        "the server on " + socket + " is not a CSI plugin: " + Objects.requireNonNull(detail, "detail"));
  }
}
