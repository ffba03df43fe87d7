package dev.csisupervisor.client;

import dev.csisupervisor.common.SocketPaths;
import java.nio.file.Path;

/**
 * The socket path does not fit in a unix socket address ({@code sun_path} holds 108 bytes
 * including the terminating NUL, so at most {@value SocketPaths#MAX_BYTES} bytes of path). Raised by
 * {@link CsiClient#create} before anything connects; retrying cannot help.
 */
public final class SocketPathTooLongException extends CsiException {
  private static final long serialVersionUID = 1L;

  private final int lengthBytes;

  public SocketPathTooLongException(Path socket) {
    super(CsiErrorKind.SOCKET_PATH_TOO_LONG, socket, null, SocketPaths.tooLong("CSI plugin socket path", socket));
    this.lengthBytes = SocketPaths.lengthBytes(socket);
  }

  /** The path's length in UTF-8 bytes. */
  public int lengthBytes() {
    return lengthBytes;
  }
}
