package dev.csisupervisor.cli;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** How gRPC over HTTP/2 writes and maps statuses, as grpc-java's client does: for {@link GrpcCall}. */
final class GrpcStatuses {
  private GrpcStatuses() {}

  static StatusRuntimeException internal(String message) {
    return Status.INTERNAL.withDescription(message).asRuntimeException();
  }

  /** The agent broke HTTP/2 (as grpc-java, an {@code INTERNAL} status): {@code what} names the rule. */
  static StatusRuntimeException protocol(String what) {
    return internal("the agent broke HTTP/2: " + what);
  }

  /** As grpc-java maps an HTTP status that is not 200 without a gRPC status. */
  static StatusRuntimeException httpStatus(String http) {
    Status.Code code = switch (http == null ? "" : http) {
      case "400" -> Status.Code.INTERNAL;
      case "401" -> Status.Code.UNAUTHENTICATED;
      case "403" -> Status.Code.PERMISSION_DENIED;
      case "404" -> Status.Code.UNIMPLEMENTED;
      case "429", "502", "503", "504" -> Status.Code.UNAVAILABLE;
      default -> Status.Code.UNKNOWN;
    };
    return Status.fromCode(code).withDescription("HTTP status code " + http).asRuntimeException();
  }

  /** As grpc-java maps RST_STREAM error codes. */
  static StatusRuntimeException reset(int error) {
    Status status = switch (error) {
      case 0x7 -> Status.UNAVAILABLE; // REFUSED_STREAM
      case 0x8 -> Status.CANCELLED;
      case 0xb -> Status.RESOURCE_EXHAUSTED; // ENHANCE_YOUR_CALM
      case 0xc -> Status.PERMISSION_DENIED; // INADEQUATE_SECURITY
      default -> Status.INTERNAL;
    };
    return status.withDescription("RST_STREAM closed stream. HTTP/2 error code: " + error).asRuntimeException();
  }

  /** The status trailers carry: {@code grpc-status} (a number) and {@code grpc-message} (percent-encoded). */
  static Status trailers(String code, String message) {
    Status status;
    try {
      status = Status.fromCodeValue(Integer.parseInt(code));
    } catch (NumberFormatException e) {
      return Status.UNKNOWN.withDescription("invalid grpc-status: " + code);
    }
    return message == null ? status : status.withDescription(percentDecode(message));
  }

  /** gRPC's {@code grpc-timeout}: at most 8 digits and a unit. */
  static String timeout(Duration d) {
    long ms = Math.max(1, d.toMillis());
    return ms < 100_000_000L ? ms + "m" : Math.min(99_999_999L, d.toSeconds()) + "S";
  }

  /** gRPC's percent-encoding of {@code grpc-message}: {@code %XX} for bytes outside printable ASCII and '%'. */
  static String percentDecode(String s) {
    if (s.indexOf('%') < 0) {
      return s;
    }
    byte[] raw = s.getBytes(StandardCharsets.US_ASCII);
    ByteArrayOutputStream b = new ByteArrayOutputStream(raw.length);
    for (int i = 0; i < raw.length; i++) {
      if (raw[i] == '%' && i + 2 < raw.length && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
        b.write(hex(raw[i + 1]) << 4 | hex(raw[i + 2]));
        i += 2;
      } else {
        b.write(raw[i]);
      }
    }
    return b.toString(StandardCharsets.UTF_8);
  }

  private static int hex(byte c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
  }
}
