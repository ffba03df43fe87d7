package dev.csisupervisor.client;

import dev.csisupervisor.common.Bounds;
import java.time.Duration;

/**
 * Settings of one {@link CsiClient}. Immutable; start from {@link #defaults()} and change fields
 * with the {@code with...} methods.
 *
 * @param callTimeout deadline of every single call ({@code Probe}, {@code GetPluginInfo}, ...);
 *     must be positive. Default 5 s.
 * @param maxInboundMessageBytes largest response accepted, in bytes; a larger one fails with
 *     {@link ResponseTooLargeException}. Must be positive. Default 4 MiB.
 * @param fingerprintTimeout deadline of each call {@link CsiClient#fingerprintAsync} makes. Longer
 *     than a probe's by default: a cloud driver's {@code NodeGetInfo} may query instance metadata.
 *     Must be positive. Default 30 s.
 * @param volumeCallTimeout deadline of each volume call (stage, publish, their inverses, stats,
 *     expand, create, delete, controller publish): a real driver formats, attaches or mounts here,
 *     which can take far longer than a probe. Must be positive. Default 2 min (the kubelet's).
 */
public record CsiClientOptions(Duration callTimeout, int maxInboundMessageBytes,
    Duration fingerprintTimeout, Duration volumeCallTimeout) {
  /** Default deadline of every call. */
  public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofSeconds(5);
  /** Default bound on a response's size. */
  public static final int DEFAULT_MAX_INBOUND_MESSAGE_BYTES = 4 * 1024 * 1024;
  /** Default deadline of each fingerprint call. */
  public static final Duration DEFAULT_FINGERPRINT_TIMEOUT = Duration.ofSeconds(30);
  /** Default deadline of each volume call. */
  public static final Duration DEFAULT_VOLUME_CALL_TIMEOUT = Duration.ofMinutes(2);

  private static final CsiClientOptions DEFAULTS = new CsiClientOptions(DEFAULT_CALL_TIMEOUT,
      DEFAULT_MAX_INBOUND_MESSAGE_BYTES, DEFAULT_FINGERPRINT_TIMEOUT, DEFAULT_VOLUME_CALL_TIMEOUT);

  public CsiClientOptions {
    Bounds.positive(callTimeout, "callTimeout");
    Bounds.positive(maxInboundMessageBytes, "maxInboundMessageBytes");
    Bounds.positive(fingerprintTimeout, "fingerprintTimeout");
    Bounds.positive(volumeCallTimeout, "volumeCallTimeout");
  }

  /** With the default fingerprint timeout. */
  public CsiClientOptions(Duration callTimeout, int maxInboundMessageBytes) {
    this(callTimeout, maxInboundMessageBytes, DEFAULT_FINGERPRINT_TIMEOUT, DEFAULT_VOLUME_CALL_TIMEOUT);
  }

  /** 5 s per call, 30 s per fingerprint call, 2 min per volume call, 4 MiB per response. */
  public static CsiClientOptions defaults() {
    return DEFAULTS;
  }

  public CsiClientOptions withCallTimeout(Duration callTimeout) {
    return new CsiClientOptions(callTimeout, maxInboundMessageBytes, fingerprintTimeout, volumeCallTimeout);
  }

  public CsiClientOptions withMaxInboundMessageBytes(int maxInboundMessageBytes) {
    return new CsiClientOptions(callTimeout, maxInboundMessageBytes, fingerprintTimeout, volumeCallTimeout);
  }

  public CsiClientOptions withFingerprintTimeout(Duration fingerprintTimeout) {
    return new CsiClientOptions(callTimeout, maxInboundMessageBytes, fingerprintTimeout, volumeCallTimeout);
  }

  public CsiClientOptions withVolumeCallTimeout(Duration volumeCallTimeout) {
    return new CsiClientOptions(callTimeout, maxInboundMessageBytes, fingerprintTimeout, volumeCallTimeout);
  }
}
