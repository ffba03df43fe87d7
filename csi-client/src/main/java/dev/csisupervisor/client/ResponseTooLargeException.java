package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/** The plugin's response was larger than {@link CsiClientOptions#maxInboundMessageBytes()}. */
public final class ResponseTooLargeException extends CsiException {
  private static final long serialVersionUID = 1L;

  private final int limitBytes;

  /** @param detail gRPC's description, which has the actual size; may be null */
  public ResponseTooLargeException(Path socket, String method, int limitBytes, String detail) {
    super(CsiErrorKind.RESPONSE_TOO_LARGE, socket, method, withDetail("the " + Objects.requireNonNull(method, "method")
        + " response from " + socket + " is larger than the limit of " + limitBytes + " bytes", detail));
    this.limitBytes = limitBytes;
  }

  /** The inbound message limit that was exceeded. */
  public int limitBytes() {
    return limitBytes;
  }
}
