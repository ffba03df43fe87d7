package dev.csisupervisor.client;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The plugin answered, but the answer breaks a CSI rule the client relies on: an empty plugin
 * {@code name}, an empty {@code node_id}, a negative {@code max_volumes_per_node}.
 */
public final class InvalidResponseException extends CsiException {
  private static final long serialVersionUID = 1L;

  /** @param problem what is wrong, e.g. "name is empty, but CSI requires it" */
  public InvalidResponseException(Path socket, String method, String problem) {
    super(CsiErrorKind.INVALID_RESPONSE, socket, method,
        callOn(method, socket) + " returned an invalid response: " + Objects.requireNonNull(problem, "problem"));
  }
}
