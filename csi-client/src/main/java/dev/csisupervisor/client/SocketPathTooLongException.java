package dev.csisupervisor.client;

import java.nio.file.Path;

/**
 * The socket path does not fit in a unix socket address ({@code sun_path} holds 108 bytes
 * including the terminating NUL, so at most {@value #MAX_PATH_BYTES} bytes of path). Raised by
 * {@link CsiClient#create} before anything connects; retrying cannot help.
 */
public final class SocketPathTooLongException extends CsiException {
  private static final long serialVersionUID = 1L;

  /** The longest socket path, in bytes (UTF-8), that a unix domain socket address can hold. */
  public static final int MAX_PATH_BYTES = 107;

  private final int lengthBytes;

  /** @param lengthBytes the path's length in UTF-8 bytes */
  public SocketPathTooLongException(Path socket, int lengthBytes) {
    super(
        socket,
        null,
        "CSI plugin socket path is " + lengthBytes + " bytes long, over the unix socket limit of "
            + MAX_PATH_BYTES + " bytes: " + socket,
        null);
    this.lengthBytes = lengthBytes;
  }

  /** The path's length in UTF-8 bytes. */
  public int lengthBytes() {
    return lengthBytes;
  }

  @Override
  public CsiErrorKind kind() {
    return CsiErrorKind.SOCKET_PATH_TOO_LONG;
  }
}
