package dev.csisupervisor.client;

import java.nio.file.Path;

/** Nothing exists at the socket path (the plugin has not created its socket, or removed it). */
public final class SocketNotFoundException extends CsiException {
  private static final long serialVersionUID = 1L;

  /**
   * @param detail why, if more is known than "no such file" (e.g. a parent is not a directory); may be null
   */
  public SocketNotFoundException(Path socket, String detail) {
    super(CsiErrorKind.SOCKET_NOT_FOUND, socket, null, withDetail("CSI plugin socket " + socket + " does not exist", detail));
  }
}
