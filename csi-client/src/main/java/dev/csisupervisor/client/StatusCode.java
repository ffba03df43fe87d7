package dev.csisupervisor.client;

/**
 * The gRPC status codes (same names and numbers as gRPC's), so that callers above the client can
 * read a plugin's error without depending on gRPC.
 */
public enum StatusCode {
  OK(0),
  CANCELLED(1),
  UNKNOWN(2),
  INVALID_ARGUMENT(3),
  DEADLINE_EXCEEDED(4),
  NOT_FOUND(5),
  ALREADY_EXISTS(6),
  PERMISSION_DENIED(7),
  RESOURCE_EXHAUSTED(8),
  FAILED_PRECONDITION(9),
  ABORTED(10),
  OUT_OF_RANGE(11),
  UNIMPLEMENTED(12),
  INTERNAL(13),
  UNAVAILABLE(14),
  DATA_LOSS(15),
  UNAUTHENTICATED(16);

  private final int value;

  StatusCode(int value) {
    this.value = value;
  }

  /** The numeric code as sent on the wire. */
  public int value() {
    return value;
  }

  /**
   * The constant for a numeric code.
   *
   * @throws IllegalArgumentException if {@code value} is not a gRPC status code (0..16)
   */
  public static StatusCode of(int value) {
    for (StatusCode code : values()) {
      if (code.value == value) {
        return code;
      }
    }
    throw new IllegalArgumentException("value must be a gRPC status code 0..16, got " + value);
  }
}
