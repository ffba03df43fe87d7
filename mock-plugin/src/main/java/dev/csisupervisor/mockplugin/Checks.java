package dev.csisupervisor.mockplugin;

import dev.csisupervisor.common.SocketPaths;
import java.nio.file.Path;
import java.util.Objects;

/** Argument checks whose messages name the field and the value. */
final class Checks {

  private Checks() {
  }

  static String notBlank(String field, String value) {
    Objects.requireNonNull(value, field);
    if (value.isBlank()) {
      throw new IllegalArgumentException(field + " must not be blank: '" + value + "'");
    }
    return value;
  }

  /** Returns the absolute, normalized socket path, refusing paths the kernel cannot bind. */
  static Path socketPath(Path socket) {
    Objects.requireNonNull(socket, "socket");
    Path absolute = socket.toAbsolutePath().normalize();
    if (absolute.getParent() == null) {
      throw new IllegalArgumentException("socket must name a file, not the root: " + socket);
    }
    return SocketPaths.checkLength("socket path", absolute);
  }
}
