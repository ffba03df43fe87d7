package dev.csisupervisor.client;

import java.nio.file.Path;

/** This process may not look up the socket path or connect to the socket. */
public final class SocketPermissionException extends CsiException {
  private static final long serialVersionUID = 1L;

  /** @param detail which operation was denied, e.g. "connect(..) failed: Permission denied"; may be null */
  public SocketPermissionException(Path socket, String detail) {
    super(CsiErrorKind.PERMISSION_DENIED, socket, null, withDetail("permission denied on CSI plugin socket " + socket, detail));
  }
}
