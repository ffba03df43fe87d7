package dev.csisupervisor.common;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The longest path a unix domain socket can be bound or connected at. Linux {@code sun_path} holds
 * 108 bytes including the terminating NUL, so a path may have at most {@value #MAX_BYTES} bytes
 * (UTF-8). A longer path fails only at bind or connect time, with an error that names no path;
 * checking it up front gives a message that does.
 *
 * <p>Stateless and thread-safe.
 */
public final class SocketPaths {
  /** The longest socket path, in UTF-8 bytes, that a unix socket address can hold. */
  public static final int MAX_BYTES = 107;

  private SocketPaths() {}

  /** The length of {@code socket} as the kernel counts it: UTF-8 bytes of the path as given. */
  public static int lengthBytes(Path socket) {
    return socket.toString().getBytes(StandardCharsets.UTF_8).length;
  }

  /** Whether {@code socket} fits in a unix socket address. */
  public static boolean fits(Path socket) {
    return lengthBytes(socket) <= MAX_BYTES;
  }

  /**
   * Says that {@code socket} is too long, naming it and its length: {@code "<what> <socket> is 108
   * bytes, over the unix socket limit of 107 bytes"}.
   *
   * @param what how the caller names the path (the field it came from, e.g. {@code
   *     "externalSocket"})
   */
  public static String tooLong(String what, Path socket) {
    return what + " " + socket + " is " + lengthBytes(socket)
        + " bytes, over the unix socket limit of " + MAX_BYTES + " bytes";
  }

  /**
   * Returns {@code socket} if it fits.
   *
   * @throws IllegalArgumentException with the {@link #tooLong} message if it does not
   */
  public static Path checkLength(String what, Path socket) {
    if (!fits(socket)) {
      throw new IllegalArgumentException(tooLong(what, socket));
    }
    return socket;
  }
}
