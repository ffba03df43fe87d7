package dev.csisupervisor.catalog;

/**
 * An etcd request failed: unreachable, timed out, refused, or answered with an error. The message names the
 * endpoint, the request and etcd's status. Callers in this package treat it as "etcd is unavailable for now"
 * and retry with backoff; it never reaches a local registration.
 */
public final class EtcdException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String code;

  EtcdException(String message, String code, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  /** The gRPC status code name (UNAVAILABLE, DEADLINE_EXCEEDED, ...), or a local reason. */
  public String code() {
    return code;
  }
}
