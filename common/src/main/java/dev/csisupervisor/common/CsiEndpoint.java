package dev.csisupervisor.common;

import java.nio.file.Path;

/**
 * How a CSI plugin learns where to listen (CSI spec, "Plugin Discovery"): the CO sets the
 * {@code CSI_ENDPOINT} environment variable to a gRPC target, here always a unix socket.
 */
public final class CsiEndpoint {
  private CsiEndpoint() {}

  /** The environment variable the CO sets for a plugin. */
  public static final String ENV = "CSI_ENDPOINT";

  /** The endpoint of a plugin serving on {@code socket}: {@code unix:///abs/path}. */
  public static String of(Path socket) {
    return "unix://" + socket.toAbsolutePath();
  }
}
