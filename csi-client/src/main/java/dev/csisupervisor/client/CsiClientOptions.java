package dev.csisupervisor.client;

import java.time.Duration;
import java.util.Objects;

/**
 * Settings of one {@link CsiClient}. Immutable; start from {@link #defaults()} and change fields
 * with the {@code with...} methods.
 *
 * @param callTimeout deadline of every call (for {@code fingerprint}, of each of the calls it makes,
 *     which run concurrently); must be positive. Default 5 s.
 * @param maxInboundMessageBytes largest response accepted, in bytes; a larger one fails with
 *     {@link ResponseTooLargeException}. Must be positive. Default 4 MiB.
 */
public record CsiClientOptions(Duration callTimeout, int maxInboundMessageBytes) {
  /** Default deadline of every call. */
  public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(5);
  /** Default bound on a response's size. */
  public static final int DEFAULT_MAX_INBOUND_MESSAGE_BYTES = 4 * 1024 * 1024;

  private static final CsiClientOptions DEFAULTS =
      new CsiClientOptions(DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_INBOUND_MESSAGE_BYTES);

  public CsiClientOptions {
    Objects.requireNonNull(callTimeout, "callTimeout");
    if (callTimeout.isNegative() || callTimeout.isZero()) {
      throw new IllegalArgumentException("callTimeout must be positive, got " + callTimeout);
    }
    if (maxInboundMessageBytes <= 0) {
      throw new IllegalArgumentException(
          "maxInboundMessageBytes must be positive, got " + maxInboundMessageBytes);
    }
  }

  /** 5 s per call, 4 MiB per response. */
  public static CsiClientOptions defaults() {
    return DEFAULTS;
  }

  public CsiClientOptions withCallTimeout(Duration callTimeout) {
    return new CsiClientOptions(callTimeout, maxInboundMessageBytes);
  }

  public CsiClientOptions withMaxInboundMessageBytes(int maxInboundMessageBytes) {
    return new CsiClientOptions(callTimeout, maxInboundMessageBytes);
  }
}
