package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The plugin answered the call with a gRPC error status, e.g. {@code FAILED_PRECONDITION} from a
 * Probe of an unhealthy plugin, or {@code UNIMPLEMENTED} from a Controller call to a node-only
 * plugin. Code and message are kept as the plugin sent them.
 */
public final class CsiStatusException extends CsiException {
  private static final long serialVersionUID = 1L;

  private final StatusCode code;
  private final String description;

  /** @param description the status message the plugin sent; may be null or empty */
  public CsiStatusException(Path socket, String method, StatusCode code, String description) {
    super(CsiErrorKind.PLUGIN_ERROR, socket, method,
        callOn(method, socket) + " failed: " + Objects.requireNonNull(code, "code")
            + (description == null || description.isEmpty() ? "" : ": " + description));
    this.code = code;
    this.description = description == null ? "" : description;
  }

  /** The status code the plugin returned. */
  public StatusCode code() {
    return code;
  }

  /** The status message the plugin returned; empty if none. */
  public String description() {
    return description;
  }
}
